package models

import (
	"context"
	"fmt"
	"strings"
)

// Rules and events of merging verified work.
const (
	// RuleMergeOnlyVerified refuses a merge whose branch tip is not the verified tree:
	// a change after verification must be verified again.
	RuleMergeOnlyVerified = "merge_only_verified"
	// RuleMergeConflict refuses a merge that conflicts with the target; a fix task
	// carries the conflicting files.
	RuleMergeConflict = "merge_conflict"
	EventTaskMerged   = "task.merged"
)

// Lander lands a verified task's commit on its agent's target branch. The runner's
// workspace manager implements it (runner.Landing); its errors are *Error with code
// ECONFLICT and RuleMergeOnlyVerified, or a *MergeConflict.
type Lander interface {
	Land(ctx context.Context, t *Task, agent *Agent) (Landed, error)
}

// Landed is a merge done: the target branch, the commit it now points at, and whether
// it was a fast-forward.
type Landed struct {
	Target      string `json:"target"`
	Commit      string `json:"commit"`
	FastForward bool   `json:"fast_forward"`
}

// MergeConflict is a merge the target refused: the files that conflict, with their
// hunks (bounded).
type MergeConflict struct {
	Target string
	Files  []string
	Hunks  string
}

func (e *MergeConflict) Error() string {
	return fmt.Sprintf("merging into %s conflicts in %s", e.Target, strings.Join(e.Files, ", "))
}

// MergeTask merges verified task id's commit into its agent's target branch, by a
// lead: only a verified task with a commit, and only when its branch's tip is still the
// verified tree (else ECONFLICT merge_only_verified, and the target does not move). A
// conflict is refused too (ECONFLICT merge_conflict) and a fix task, for the task's
// role, carries the conflicting files and hunks. A merge records task.merged.
func (s *Service) MergeTask(ctx context.Context, actor *Agent, id int64, lander Lander) (*Landed, error) {
	if err := requireAny(actor, "lead_merges", RoleLead); err != nil {
		return nil, err
	}
	if lander == nil {
		return nil, Errorf(ECONFLICT, "this server does not run the runner, whose workspaces hold the task branches")
	}
	var t *Task
	var builder *Agent
	err := s.store.InTx(ctx, func(tx Tx) error {
		var err error
		if t, err = tx.GetTask(ctx, id); err != nil {
			return err
		}
		if t.State != TaskVerified || t.Commit == "" || t.BuilderID == nil {
			return &Error{Code: ECONFLICT, Rule: RuleMergeOnlyVerified,
				Message: fmt.Sprintf("task %d is %s%s: only a verified task's commit can be merged", t.ID, t.State, map[bool]string{true: " with no verified commit"}[t.Commit == ""])}
		}
		builder, err = tx.GetAgent(ctx, *t.BuilderID)
		return err
	})
	if err != nil {
		return nil, err
	}
	landed, err := lander.Land(ctx, t, builder)
	if conflict, ok := err.(*MergeConflict); ok {
		return nil, s.conflictFixTask(ctx, actor, t, conflict)
	}
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		return s.emit(ctx, tx, EventTaskMerged, actor, &t.ID, t.GoalID, map[string]any{
			"branch": t.Branch, "commit": t.Commit, "target": landed.Target, "merged": landed.Commit, "fast_forward": landed.FastForward})
	})
	return &landed, err
}

// conflictFixTask creates the task that resolves a merge conflict and returns the
// refusal naming it.
func (s *Service) conflictFixTask(ctx context.Context, actor *Agent, t *Task, c *MergeConflict) error {
	brief := fmt.Sprintf("Merging task %d (%s, branch %s) into %s conflicts in:\n\n- %s\n\nResolve the conflict so that the change of task %d applies on top of %s.\n\n%s",
		t.ID, t.Title, t.Branch, c.Target, strings.Join(c.Files, "\n- "), t.ID, c.Target, Truncate(c.Hunks, 8000))
	fix, err := s.CreateTask(ctx, actor, TaskSpec{Title: Truncate("Resolve the merge conflict of task "+fmt.Sprint(t.ID)+": "+t.Title, 200),
		Brief: brief, Role: t.Role})
	if err != nil {
		return err
	}
	return &Error{Code: ECONFLICT, Rule: RuleMergeConflict,
		Message: fmt.Sprintf("%s; task %d was created to resolve it", c.Error(), fix.ID)}
}
