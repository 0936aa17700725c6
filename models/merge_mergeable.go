package models

import (
	"context"
	"fmt"
)

// Mergeability says whether merging a goal can land anything and, when not, why not.
type Mergeability struct {
	// OK: MergeGoal would land at least one verified commit.
	OK bool
	// Reason says in words why a merge cannot land anything ("nothing verified to
	// merge", "already merged", "tasks still open"); "" when OK.
	Reason string
	// Pending counts the verified commits not on their target yet.
	Pending int
}

// GoalMergeable reports whether MergeGoal of goal id could land anything: the goal is
// verified, and one of its verified tasks has a commit of its own that its target does
// not hold yet (each candidate's branch is read with lander). A branch that cannot be
// read counts as pending: the merge itself says what is wrong with it.
func (s *MergeService) GoalMergeable(ctx context.Context, id int64, lander Lander) (Mergeability, error) {
	g, err := s.store.GetGoal(ctx, id)
	if err != nil {
		return Mergeability{}, err
	}
	if lander == nil {
		return Mergeability{Reason: "This server does not run the runner, whose workspaces hold the task branches."}, nil
	}
	switch g.State {
	case GoalVerified:
	case GoalPendingVerify:
		return Mergeability{Reason: "Not yet: the goal waits for a lead to verify it; only a verified goal's work is merged."}, nil
	default:
		return Mergeability{Reason: fmt.Sprintf("Not yet: tasks still open (the goal is %s); only a verified goal's work is merged.", g.State)}, nil
	}
	tasks, err := s.store.ListTasks(ctx, TaskFilter{GoalID: id, State: TaskVerified, Limit: 1000})
	if err != nil {
		return Mergeability{}, err
	}
	candidates := 0
	var m Mergeability
	for i := range tasks {
		t := &tasks[i]
		if t.Commit == "" {
			continue
		}
		candidates++
		r, err := s.BranchReport(ctx, t, lander)
		if err != nil || (!r.Merged && !r.Gone) {
			m.Pending++
		}
	}
	switch {
	case candidates == 0:
		m.Reason = "Nothing verified to merge: none of the goal's verified tasks has a commit on a branch of its own."
	case m.Pending == 0:
		m.Reason = "Already merged: every verified commit of the goal is on its target branch."
	default:
		m.OK = true
	}
	return m, nil
}
