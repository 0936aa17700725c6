package contract

import (
	"slices"
	"strings"
	"time"
)

// Generation in two steps. A task's contract is fixed before delegation, but the
// commands that check it depend on the workspace the task will run in (go.mod,
// package.json, pyproject.toml, …), which is known only once the runner has prepared
// it — for a workflow step, on top of the previous step's verified commit. So:
//
//  1. At creation, ResolveContract stores the classification (verifiable, advisory,
//     skip) and the criteria that depend only on the task's words and expected files,
//     and marks a contract whose criteria the workspace completes: Workspace
//     "pending" for a verifiable contract whose criteria were generated and that
//     names no verify commands, "pending-commands" for one whose criteria name an
//     activity only a stack gives a command.
//  2. Right before the first attempt the runner reads the prepared workspace
//     (DetectWorkspace) and calls AttemptService.FixStackCriteria in the transaction that
//     records the attempt's start: AddStackCriteria adds the criteria of every stack
//     the workspace matches, each naming why it is there ("Unit tests pass (go.mod
//     found)"), the contract becomes Workspace "detected" with its Stacks, and a
//     contract.completed event names them. The contract is fixed, and visible,
//     before the worker starts; later attempts and retries keep it.
//
// Explicit contracts are left alone: criteria or verify commands the caller gave are
// never joined by stack commands, an explicit skip gets no generated command at all,
// and advisory runs no checks.

// Workspace steps of a verification contract (Verification.Workspace).
const (
	WorkspacePending         = "pending"
	WorkspacePendingCommands = "pending-commands"
	WorkspaceDetected        = "detected"
)

// Tools lists the programs the rules name, in stack conditions and stack commands,
// sorted: what DetectWorkspace should look for on PATH.
func (r Rules) Tools() []string {
	var out []string
	add := func(conds []Condition) {
		for _, c := range conds {
			if c.Tool != "" {
				out = append(out, c.Tool)
			}
		}
	}
	for _, st := range r.Stacks {
		add(st.Detect)
		for _, sc := range st.Commands {
			add(sc.When)
			out = append(out, sc.Tools...)
		}
		for _, res := range st.Results {
			add(res.When)
		}
	}
	out = dedupStrings(out)
	slices.Sort(out)
	return out
}

// stackProvides reports whether some stack of the rules has a command for activity.
func (r Rules) stackProvides(activity string) bool {
	for _, st := range r.Stacks {
		for _, sc := range st.Commands {
			if sc.Activity == activity {
				return true
			}
		}
	}
	return false
}

// workspaceStep decides what a resolved contract waits for from its workspace (see
// the steps above). generated says whether ResolveContract generated the criteria.
func workspaceStep(v Verification, cp Completion, rules Rules, generated bool) string {
	if len(rules.Stacks) == 0 || v.Type == VerifyAdvisory {
		return ""
	}
	if generated && v.Type == VerifyVerifiable && len(cp.Verify) == 0 {
		return WorkspacePending
	}
	for _, cr := range v.Criteria {
		if strings.TrimSpace(cr.Command) == "" && strings.TrimSpace(rules.Activities[cr.Activity]) == "" && rules.stackProvides(cr.Activity) {
			return WorkspacePendingCommands
		}
	}
	return ""
}

// AddStackCriteria completes a contract from its workspace, once: for a contract
// whose Workspace is pending or pending-commands it gives each criterion named only
// by an activity the command of every matched stack that has one (one criterion per
// stack), and for a pending one it adds the criteria of every command of every
// matched stack (each once per stack and activity), whose descriptions say why they
// are there. Then Workspace is "detected" and Stacks names the matched stacks. It
// reports whether it changed the contract: any other contract (explicit criteria or
// verify commands, skip, advisory, already detected) is left as it is. Pure.
func (c *Contract) AddStackCriteria(rules Rules, facts WorkspaceFacts) bool {
	v := &c.Verification
	if v.Workspace != WorkspacePending && v.Workspace != WorkspacePendingCommands {
		return false
	}
	matches := MatchStacks(rules, facts)
	out := make([]Criterion, 0, len(v.Criteria))
	for _, cr := range v.Criteria {
		if strings.TrimSpace(cr.Command) != "" || strings.TrimSpace(rules.Activities[cr.Activity]) != "" {
			out = append(out, cr)
			continue
		}
		n := len(out)
		for _, m := range matches {
			for _, mc := range m.Commands {
				if mc.Activity != cr.Activity {
					continue
				}
				nc := cr
				nc.Command, nc.Stack, nc.Tools = mc.Command, m.Name, slices.Clone(mc.Tools)
				nc.Description = withReason(cr.Description, mc.Reason)
				out = append(out, nc)
			}
		}
		if len(out) == n {
			out = append(out, cr)
		}
	}
	if v.Workspace == WorkspacePending {
		for _, m := range matches {
			for _, mc := range m.Commands {
				if slices.ContainsFunc(out, func(cr Criterion) bool { return cr.Stack == m.Name && cr.Activity == mc.Activity }) {
					continue
				}
				out = append(out, stackCriterion(m.Name, mc))
			}
		}
	}
	if len(out) == 0 {
		out = nil
	}
	v.Criteria = out
	v.Stacks = nil
	for _, m := range matches {
		v.Stacks = append(v.Stacks, m.Name)
	}
	v.Workspace = WorkspaceDetected
	return true
}

// stackCriterion is the criterion of a matched stack command.
func stackCriterion(stack string, mc MatchedCommand) Criterion {
	desc := mc.Description
	if desc == "" {
		desc = activityDescriptions[mc.Activity]
	}
	if desc == "" {
		desc = mc.Activity + " passes"
	}
	return Criterion{Activity: mc.Activity, Description: withReason(desc, mc.Reason), Command: mc.Command,
		Stack: stack, Tools: slices.Clone(mc.Tools)}
}

// withReason appends why a criterion is there: "Unit tests pass (go.mod found)".
func withReason(desc, reason string) string {
	desc = strings.TrimSpace(desc)
	if reason == "" {
		return desc
	}
	if desc == "" {
		return reason
	}
	return desc + " (" + reason + ")"
}

// GenerateForWorkspace is contract generation with the workspace known: Generate's
// classification and text criteria, completed by AddStackCriteria from facts, as the
// runner completes an auto contract before the first attempt. Pure.
func GenerateForWorkspace(title, description string, expectedFiles []string, rules Rules, facts WorkspaceFacts, now time.Time) Verification {
	c := ResolveContract(Contract{Verification: Verification{Type: VerifyAuto}}, title, description, expectedFiles, rules, now)
	c.AddStackCriteria(rules, facts)
	return c.Verification
}
