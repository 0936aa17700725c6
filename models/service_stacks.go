package models

import (
	"context"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/models/contract"
)

// EventContractCompleted is the event of a contract completed from its workspace
// before the first attempt (FixStackCriteria).
const EventContractCompleted = "contract.completed"

// FixStackCriteria completes the contract of task t from its prepared workspace,
// inside the runner's transaction that records the first attempt's start, so that the
// contract is fixed — and stored, and visible — before the worker starts. It reads the
// task as tx holds it and the project rules, applies AddStackCriteria with facts (what
// DetectWorkspace read from the workspace), stores the contract with the task and
// appends a contract.completed event naming the stacks matched, the criteria added and
// the facts they came from. A contract that waits for nothing (explicit criteria or
// verify commands, skip, advisory, already completed by an earlier attempt or a dead
// runner's claim) is left as it is, with no event. Either way t.Contract is set to the
// stored contract. Only the runner may do it (runner_only), and only while the task is
// pending, assigned or in progress (ECONFLICT otherwise).
func (s *AttemptService) FixStackCriteria(ctx context.Context, tx Tx, runner *Agent, t *Task, facts contract.WorkspaceFacts) error {
	if !runner.IsRunner() {
		return Forbidden("runner_only", "only the runner completes a contract from the task's workspace")
	}
	stored, err := tx.GetTask(ctx, t.ID)
	if err != nil {
		return err
	}
	step := stored.Contract.Verification.Workspace
	if step != contract.WorkspacePending && step != contract.WorkspacePendingCommands {
		t.Contract = stored.Contract
		return nil
	}
	switch stored.State {
	case TaskPending, TaskAssigned, TaskInProgress:
	default:
		return &Error{Code: ECONFLICT, Message: "the task is " + string(stored.State) + ": its contract is completed only before its first attempt", State: string(stored.State)}
	}
	rules, err := tx.GetRules(ctx)
	if ErrorCode(err) == ENOTFOUND {
		def := DefaultRules()
		rules, err = &def, nil
	}
	if err != nil {
		return err
	}
	before := len(stored.Contract.Verification.Criteria)
	stored.Contract.AddStackCriteria(rules.Rules, facts)
	if err := stored.Contract.Validate(); err != nil {
		return err
	}
	if err := tx.UpdateTask(ctx, stored); err != nil {
		return err
	}
	t.Contract, t.UpdatedAt = stored.Contract, stored.UpdatedAt
	v := stored.Contract.Verification
	var added []map[string]string
	for _, cr := range v.Criteria {
		if cr.Stack != "" {
			added = append(added, map[string]string{"stack": cr.Stack, "activity": cr.Activity, "description": cr.Description, "command": cr.Command})
		}
	}
	stacks := v.Stacks
	if stacks == nil {
		stacks = []string{}
	}
	data := map[string]any{"stacks": stacks, "step": step, "criteria_before": before, "criteria": len(v.Criteria),
		"stack_criteria": added, "facts": factsSummary(facts)}
	return s.emit(ctx, tx, EventContractCompleted, runner, &t.ID, t.GoalID, data)
}

// factsSummary is what an event keeps of the facts: bounded lists.
func factsSummary(f contract.WorkspaceFacts) map[string]any {
	const most = 50
	cut := func(l []string) []string {
		if len(l) > most {
			return append(l[:most:most], "…")
		}
		return l
	}
	return map[string]any{"files": cut(f.Files), "scripts": cut(f.Scripts), "targets": cut(f.Targets),
		"configured": f.Configured, "tools": f.Tools, "problems": cut(f.Problems)}
}

// WorkspaceCheck is what the rules page shows for a directory: the facts read from
// it and the stacks of the saved rules it matches.
type WorkspaceCheck struct {
	Dir     string                  `json:"dir"`
	Facts   contract.WorkspaceFacts `json:"facts"`
	Matches []contract.StackMatch   `json:"matches"`
}

// CheckWorkspace reads a directory on the server the way the runner reads a task's
// workspace (DetectWorkspace, with lookPath, exec.LookPath when nil) and returns the
// stacks of the saved rules it matches. Only an admin, editor or lead may look
// (editor_only): it lists a directory's top-level names. The path must be absolute
// and name an existing directory (EINVALID on field "path"); nothing is written.
func (s *TemplateService) CheckWorkspace(ctx context.Context, actor *Agent, dir string, lookPath func(string) (string, error)) (*WorkspaceCheck, error) {
	if err := requireAny(actor, "editor_only", editorRoles...); err != nil {
		return nil, err
	}
	invalid := func(msg string) error {
		return &Error{Code: EINVALID, Message: "path: " + msg, Fields: map[string]string{"path": msg}}
	}
	switch {
	case dir == "":
		return nil, invalid("is required")
	case len(dir) > contract.MaxPathLen:
		return nil, invalid("is too long")
	case !filepath.IsAbs(dir):
		return nil, invalid("must be an absolute path, such as /srv/checkouts/app")
	}
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	switch {
	case err != nil && os.IsNotExist(err):
		return nil, invalid("no such directory")
	case err != nil:
		return nil, invalid("cannot be read")
	case !st.IsDir():
		return nil, invalid("is not a directory")
	}
	rules, err := s.Rules(ctx)
	if err != nil {
		return nil, err
	}
	facts, err := contract.DetectWorkspace(dir, lookPath, rules.Tools()...)
	if err != nil {
		return nil, invalid("cannot be listed")
	}
	return &WorkspaceCheck{Dir: dir, Facts: facts, Matches: contract.MatchStacks(rules.Rules, facts)}, nil
}
