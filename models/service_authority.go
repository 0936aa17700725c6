package models

import (
	"maps"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/contract"
)

// RuleCommandsNeedEditor names the rule that refuses shell from an untrusted caller:
// only an admin, editor or lead may put a command into a contract, a template or the
// project rules. Everyone else names criteria by activity, and the runner takes the
// activity's command from the project rules when it runs the check.
const RuleCommandsNeedEditor = "commands_need_editor"

// mayWriteCommands reports whether a may put shell commands (and held-out tests) into
// contracts, templates and the project rules: whether it holds one of the trusted roles
// (admin, editor, lead), the roles that edit templates and rules.
//
// Never through an attempt token: a worker acting within its attempt writes no shell
// and no held-out test, whatever roles its agent holds.
func mayWriteCommands(a *Agent) bool { return a.Scope == nil && CanEditTemplates(a) }

// requireCommandAuthority refuses (EFORBIDDEN, commands_need_editor) a contract
// supplied by actor that carries a shell command unless actor may write commands.
// It is given the caller's contract as supplied, before generation: what generation
// adds comes from the project rules, not from the caller. where prefixes the field
// named in the message ("" for a task's own contract, "steps[2]" for a step).
func requireCommandAuthority(actor *Agent, c contract.Contract, where string) error {
	fields := c.CommandFields()
	if len(fields) == 0 || mayWriteCommands(actor) {
		return nil
	}
	field := fields[0]
	if where != "" {
		field = where + "." + field
	}
	return Forbidden(RuleCommandsNeedEditor, "only an admin, editor or lead may put shell commands into a contract (%s); "+
		"name the criterion by activity instead, and the project rules supply its command", field)
}

// requireRulesAuthority refuses project rules that map an activity to a command, or
// hold stacks (whose commands and results commands are shell), unless actor may write
// commands.
func requireRulesAuthority(actor *Agent, r *ProjectRules) error {
	if mayWriteCommands(actor) {
		return nil
	}
	names := slices.Sorted(maps.Keys(r.Activities))
	for _, name := range names {
		if strings.TrimSpace(r.Activities[name]) != "" {
			return Forbidden(RuleCommandsNeedEditor, "only an admin, editor or lead may change the project rules: they map activities to shell commands (activities.%s)", name)
		}
	}
	if len(r.Stacks) > 0 {
		return Forbidden(RuleCommandsNeedEditor, "only an admin, editor or lead may change the project rules: their stacks hold shell commands (stacks[0].commands)")
	}
	return nil
}
