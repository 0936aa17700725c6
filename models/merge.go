package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/contract"
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

// Lander lands a verified task's commit on its agent's target branch and reports on
// task branches. The runner's workspace manager implements it (runner.Landing).
type Lander interface {
	// Land merges; its errors are *Error with code ECONFLICT and
	// RuleMergeOnlyVerified, or a *MergeConflict.
	Land(ctx context.Context, t *Task, agent *Agent) (Landed, error)
	// Inspect reports on the task's branch; a zero report for a task without one.
	Inspect(ctx context.Context, t *Task, agent *Agent) (BranchReport, error)
}

// Landed is a merge done: the target branch, the commit it now points at, and how.
type Landed struct {
	TaskID      int64  `json:"task_id"`
	Target      string `json:"target"`
	Commit      string `json:"commit"`
	FastForward bool   `json:"fast_forward"`
	// UpToDate: the target already held the verified commit; nothing moved.
	UpToDate bool `json:"up_to_date"`
	// BranchDeleted: the task's branch was deleted after the merge (a setting).
	BranchDeleted bool `json:"branch_deleted"`
	// Pushed names the remote the target was pushed to; PushError says why a push
	// failed (the merge stands).
	Pushed    string `json:"pushed,omitempty"`
	PushError string `json:"push_error,omitempty"`
}

// BranchReport is where a task's work stands in its repository: its branch against
// the target branch it lands on, and the change from its base.
type BranchReport struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Commit string `json:"commit,omitempty"`
	Target string `json:"target"`
	// Ahead and Behind count the commits the branch has that the target lacks, and
	// the other way round.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// TipVerified: the branch's tip has the verified commit's tree, so a merge would be
	// allowed (merge_only_verified).
	TipVerified bool `json:"tip_verified"`
	// Merged: the target holds everything on the branch and the branch is what was
	// verified.
	Merged bool `json:"merged"`
	// Gone: the branch no longer exists (deleted after its merge, or by hand).
	Gone bool `json:"gone"`
	// Diff is the branch's change from its base, cut when DiffTruncated.
	Diff          string `json:"diff"`
	DiffTruncated bool   `json:"diff_truncated"`
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
func (s *MergeService) MergeTask(ctx context.Context, actor *Agent, id int64, lander Lander) (*Landed, error) {
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
	landed.TaskID = t.ID
	if landed.UpToDate {
		return &landed, nil // merged before: recorded then
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		return s.emit(ctx, tx, EventTaskMerged, actor, &t.ID, t.GoalID, map[string]any{
			"branch": t.Branch, "commit": t.Commit, "target": landed.Target, "merged": landed.Commit, "fast_forward": landed.FastForward,
			"branch_deleted": landed.BranchDeleted, "pushed": landed.Pushed, "push_error": landed.PushError})
	})
	return &landed, err
}

// conflictFixTask creates the task that resolves a merge conflict and returns the
// refusal naming it.
func (s *MergeService) conflictFixTask(ctx context.Context, actor *Agent, t *Task, c *MergeConflict) error {
	brief := fmt.Sprintf("Merging task %d (%s, branch %s) into %s conflicts in:\n\n- %s\n\nResolve the conflict so that the change of task %d applies on top of %s.\n\n%s",
		t.ID, t.Title, t.Branch, c.Target, strings.Join(c.Files, "\n- "), t.ID, c.Target, contract.Truncate(c.Hunks, 8000))
	fix, err := s.tasks.CreateTask(ctx, actor, TaskSpec{Title: contract.Truncate("Resolve the merge conflict of task "+fmt.Sprint(t.ID)+": "+t.Title, 200),
		Brief: brief, Role: t.Role})
	if err != nil {
		return err
	}
	return &Error{Code: ECONFLICT, Rule: RuleMergeConflict,
		Message: fmt.Sprintf("%s; task %d was created to resolve it", c.Error(), fix.ID)}
}

// MergeGoal merges, by a lead, the verified commits of verified goal id's tasks into
// their targets, oldest task first (a workflow's steps in order; a later step's branch
// holds the earlier ones, so they fast-forward in turn). Tasks without a commit of
// their own (advisory, no git workspace, cancelled) are skipped, and commits already
// on their target are left as they are (UpToDate). It stops at the first refusal and
// returns what landed before it with that error.
func (s *MergeService) MergeGoal(ctx context.Context, actor *Agent, id int64, lander Lander) ([]Landed, error) {
	if err := requireAny(actor, "lead_merges", RoleLead); err != nil {
		return nil, err
	}
	g, err := s.store.GetGoal(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.State != GoalVerified {
		return nil, &Error{Code: ECONFLICT, Rule: RuleMergeOnlyVerified,
			Message: fmt.Sprintf("goal %d is %s: only a verified goal's work can be merged as a whole", g.ID, g.State)}
	}
	tasks, err := s.store.ListTasks(ctx, TaskFilter{GoalID: id, Limit: 1000})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, func(a, b Task) int { return cmp.Compare(a.ID, b.ID) })
	landed := []Landed{}
	for _, t := range tasks {
		if t.State != TaskVerified || t.Commit == "" {
			continue
		}
		l, err := s.MergeTask(ctx, actor, t.ID, lander)
		var e *Error
		if errors.As(err, &e) {
			return landed, &Error{Code: e.Code, Rule: e.Rule, Fields: e.Fields,
				Message: fmt.Sprintf("task %d: %s (%d task(s) of the goal merged before it)", t.ID, e.Message, len(landed))}
		}
		if err != nil {
			return landed, err
		}
		landed = append(landed, *l)
	}
	if len(landed) == 0 {
		return nil, &Error{Code: ECONFLICT, Rule: RuleMergeOnlyVerified,
			Message: fmt.Sprintf("goal %d has no verified commit to merge: none of its tasks worked on a branch of its own", g.ID)}
	}
	return landed, nil
}

// TaskBranch reports on task id's branch for a reader of the task: its commits ahead
// of and behind the target, whether its tip is still what was verified, and its diff
// from the base. A task without a branch gets ENOTFOUND.
func (s *MergeService) TaskBranch(ctx context.Context, actor *Agent, id int64, lander Lander) (*BranchReport, error) {
	t, err := s.store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := actor.MayReadTask(t); err != nil {
		return nil, err
	}
	return s.BranchReport(ctx, t, lander)
}

// BranchReport is TaskBranch for a task its caller read and may read.
func (s *MergeService) BranchReport(ctx context.Context, t *Task, lander Lander) (*BranchReport, error) {
	if t.Branch == "" {
		return nil, Errorf(ENOTFOUND, "task %d has no branch of its own: its agent works without a git worktree", t.ID)
	}
	if lander == nil {
		return nil, Errorf(ECONFLICT, "this server does not run the runner, whose workspaces hold the task branches")
	}
	agent, err := s.branchAgent(ctx, t)
	if err != nil {
		return nil, err
	}
	r, err := lander.Inspect(ctx, t, agent)
	return &r, err
}

// branchAgent is the agent whose checkout holds t's branch: its builder, else its
// assignee.
func (s *MergeService) branchAgent(ctx context.Context, t *Task) (*Agent, error) {
	id := t.BuilderID
	if id == nil {
		id = t.AssigneeID
	}
	if id == nil {
		return nil, Errorf(ENOTFOUND, "task %d has no builder or assignee whose checkout holds its branch", t.ID)
	}
	return s.store.GetAgent(ctx, *id)
}

// RuleStepConflict names a task blocked because the verified commits of the steps it
// builds on conflict; a fix task merges them.
const RuleStepConflict = "step_conflict"

// StepConflict is a conflict between the verified commits of the tasks a task builds
// on (steps that ran side by side): their merge is the task's base, and it conflicts.
type StepConflict struct {
	// Deps are the tasks whose verified commits were combined; Base is the first one's
	// commit, where the fix starts, and Merge the commits the fix must merge into it.
	Deps  []int64
	Base  string
	Merge []string
	Files []string
	Hunks string
}

// BlockOnStepConflict, by the runner in tx, turns a conflict between the steps t
// builds on into a fix task and blocks t until it is done: the fix task (t's role and
// goal) starts from c.Base and is verified only when every commit of c.Merge is in its
// history and no conflict marker is left; t then depends on it, so its retry builds on
// the merge. The inbox item names the fix task and the files.
func (s *AttemptService) BlockOnStepConflict(ctx context.Context, tx Tx, runner *Agent, t *Task, c StepConflict) (*Task, error) {
	for _, id := range append([]string{c.Base}, c.Merge...) {
		if !isHex40(id) {
			return nil, Errorf(EINVALID, "%q is not a full commit id", id) // it goes into a check command
		}
	}
	deps := make([]string, len(c.Deps))
	for i, id := range c.Deps {
		deps[i] = fmt.Sprint(id)
	}
	var crit []contract.Criterion
	for _, m := range c.Merge {
		crit = append(crit, contract.Criterion{Activity: "check", Description: "commit " + m[:12] + " is merged",
			Command: "git merge-base --is-ancestor " + m + " HEAD"})
	}
	crit = append(crit, contract.Criterion{Activity: "check", Description: "no conflict marker is left",
		Command: `! git grep -n -E '^(<<<<<<<|>>>>>>>)( |$)' -- .`})
	brief := fmt.Sprintf("Task %d (%s) builds on the verified work of tasks %s, which ran side by side, and their changes conflict in:\n\n- %s\n\n"+
		"Your worktree starts from %s. Merge %s into it (git merge), resolve the conflicts keeping the intent of every task, and commit the merge.\n\n%s",
		t.ID, t.Title, strings.Join(deps, ", "), strings.Join(c.Files, "\n- "), c.Base, strings.Join(c.Merge, " and "), contract.Truncate(c.Hunks, 8000))
	spec := TaskSpec{Title: contract.Truncate(fmt.Sprintf("Resolve the conflict between tasks %s for task %d", strings.Join(deps, ", "), t.ID), 200),
		Brief: brief, Role: t.Role, GoalID: t.GoalID,
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, MaxAttempts: 2},
			Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: crit}}}
	fix, err := spec.build(ProjectRules{}, s.now())
	if err != nil {
		return nil, err
	}
	fix.Base = c.Base
	if err := s.tasks.insertTask(ctx, tx, runner, fix, ""); err != nil {
		return nil, err
	}
	if err := tx.AddDependency(ctx, t.ID, fix.ID); err != nil {
		return nil, err
	}
	t.DependsOn = append(t.DependsOn, fix.ID)
	msg := fmt.Sprintf("the verified work of tasks %s conflicts in %s (rule %s): task %d resolves it; retry this task once it is verified",
		strings.Join(deps, ", "), strings.Join(c.Files, ", "), RuleStepConflict, fix.ID)
	return fix, s.BlockNotReady(ctx, tx, runner, t, []string{msg})
}

// isHex40 reports whether s is a full SHA-1 commit id in lower-case hex.
func isHex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
