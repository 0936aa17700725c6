package models

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// AgentChangedEvent is the event type of a change to an agent: its data names the
// agent, who changed it ("by") and each changed field with its value before and after
// ("changes", field → FieldChange). Sandbox settings are fields of their own
// (sandbox.read, sandbox.write, sandbox.connect, sandbox.allow_unix).
const AgentChangedEvent = "agent.changed"

// FieldChange is one changed field of an agent: its value before and after, and for
// the command a line diff.
type FieldChange struct {
	Before any    `json:"before"`
	After  any    `json:"after"`
	Diff   string `json:"diff,omitempty"`
	// Hidden says the values were left out for a viewer who may not see them.
	Hidden bool `json:"hidden,omitempty"`
}

// AgentChanges returns the fields that differ between before and after, by name:
// roles, command, workdir, worktree, concurrency, disabled, the sandbox settings and
// (without its value) the password.
func AgentChanges(before, after *Agent) map[string]FieldChange {
	out := map[string]FieldChange{}
	if !slices.Equal(before.Roles, after.Roles) {
		out["roles"] = FieldChange{Before: nonNilStrings(before.Roles), After: nonNilStrings(after.Roles)}
	}
	if before.Command != after.Command {
		out["command"] = FieldChange{Before: before.Command, After: after.Command, Diff: commandDiff(before.Command, after.Command)}
	}
	if before.Workdir != after.Workdir {
		out["workdir"] = FieldChange{Before: before.Workdir, After: after.Workdir}
	}
	if before.Worktree != after.Worktree {
		out["worktree"] = FieldChange{Before: before.Worktree, After: after.Worktree}
	}
	if before.Forge != after.Forge {
		out["forge"] = FieldChange{Before: before.Forge, After: after.Forge}
	}
	if before.Concurrency != after.Concurrency {
		out["concurrency"] = FieldChange{Before: before.Concurrency, After: after.Concurrency}
	}
	if before.Disabled != after.Disabled {
		out["disabled"] = FieldChange{Before: before.Disabled, After: after.Disabled}
	}
	b, a := before.Sandbox, after.Sandbox
	if !slices.Equal(b.Read, a.Read) {
		out["sandbox.read"] = FieldChange{Before: nonNilStrings(b.Read), After: nonNilStrings(a.Read)}
	}
	if !slices.Equal(b.Write, a.Write) {
		out["sandbox.write"] = FieldChange{Before: nonNilStrings(b.Write), After: nonNilStrings(a.Write)}
	}
	if !slices.Equal(b.Connect, a.Connect) {
		out["sandbox.connect"] = FieldChange{Before: nonNilInts(b.Connect), After: nonNilInts(a.Connect)}
	}
	if b.AllowUnix != a.AllowUnix {
		out["sandbox.allow_unix"] = FieldChange{Before: b.AllowUnix, After: a.AllowUnix}
	}
	if !slices.Equal(before.PassEnv, after.PassEnv) {
		out["pass_env"] = FieldChange{Before: nonNilStrings(before.PassEnv), After: nonNilStrings(after.PassEnv)}
	}
	if !reflect.DeepEqual(before.DailyBudget, after.DailyBudget) {
		out["daily_budget"] = FieldChange{Before: before.DailyBudget, After: after.DailyBudget}
	}
	if before.PasswordHash != after.PasswordHash {
		out["password"] = FieldChange{Before: "", After: "(changed)"}
	}
	return out
}

// commandDiff is the line diff of a changed command, bounded as the audit trail's
// diffs are.
func commandDiff(before, after string) string {
	return TextDiff(before, after, DiffLimit)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// AdminOnlyAgentField reports whether an agent field is shown to admins only: the
// command, the workdir and worktree, and the sandbox settings.
func AdminOnlyAgentField(name string) bool {
	switch name {
	case "command", "workdir", "worktree", "sandbox", "pass_env":
		return true
	}
	return strings.HasPrefix(name, "sandbox.")
}

// SeesAdminFields reports whether a may read the agent fields only admins see (see
// AdminOnlyAgentField): a holds the admin role and acts as itself, not through an
// attempt token. It is the one rule the API, the pages and the live stream apply.
func (a *Agent) SeesAdminFields() bool { return a.HasRole(RoleAdmin) && a.Scope == nil }

// VisibleTo returns a copy of a as viewer may see it: without its command, workdir,
// worktree and sandbox settings unless viewer SeesAdminFields.
func (a Agent) VisibleTo(viewer *Agent) Agent {
	a.Roles = slices.Clone(a.Roles)
	a.Scope = nil
	if viewer.SeesAdminFields() {
		a.Sandbox = a.Sandbox.Clone()
		a.PassEnv = slices.Clone(a.PassEnv)
		return a
	}
	a.Command, a.Workdir, a.Worktree, a.Sandbox, a.PassEnv = "", "", false, AgentSandbox{}, nil
	return a
}

// VisibleTo returns e as viewer may see it: WithoutAdminFields unless viewer
// SeesAdminFields.
func (e Event) VisibleTo(viewer *Agent) Event {
	if viewer.SeesAdminFields() {
		return e
	}
	return e.WithoutAdminFields()
}

// CarriesAdminFields reports whether e is an event about an agent (agent.*) with data,
// which may hold fields only admins see.
func (e *Event) CarriesAdminFields() bool {
	return strings.HasPrefix(e.Type, "agent.") && len(e.Data) > 0
}

// WithoutAdminFields returns e as a viewer who does not see admin fields may see it:
// an event about an agent loses the values of the fields only admins see (a changed
// field stays named, marked hidden); other events are returned as they are.
func (e Event) WithoutAdminFields() Event {
	if !e.CarriesAdminFields() {
		return e
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(e.Data, &data); err != nil {
		e.Data = nil
		return e
	}
	for k := range data {
		if AdminOnlyAgentField(k) {
			delete(data, k)
		}
	}
	if raw, ok := data["changes"]; ok {
		var changes map[string]FieldChange
		if err := json.Unmarshal(raw, &changes); err != nil {
			delete(data, "changes")
		} else {
			for k := range changes {
				if AdminOnlyAgentField(k) {
					changes[k] = FieldChange{Hidden: true}
				}
			}
			data["changes"], _ = json.Marshal(changes)
		}
	}
	e.Data, _ = json.Marshal(data)
	return e
}
