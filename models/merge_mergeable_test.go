package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// landedSet is a Lander whose Inspect says merged for the tasks in it.
type landedSet map[int64]bool

// Land lands nothing: the test only asks whether a merge is possible.
func (l landedSet) Land(context.Context, *models.Task, *models.Agent) (models.Landed, error) {
	return models.Landed{}, nil
}

// Inspect reports t's branch, merged when t is in the set.
func (l landedSet) Inspect(_ context.Context, t *models.Task, _ *models.Agent) (models.BranchReport, error) {
	return models.BranchReport{Branch: t.Branch, Commit: t.Commit, Target: "main", TipVerified: true, Merged: l[t.ID]}, nil
}

// TestGoalMergeable: a merge is possible only for a verified goal with a verified
// commit its target lacks; otherwise the predicate says why not.
func TestGoalMergeable(t *testing.T) {
	e := newAccessEnv(t, "sqlite")
	g := &models.Goal{Title: "Merge me", State: models.GoalActive}
	e.must(e.db.CreateGoal(e.ctx, g))
	tk := &models.Task{Title: "Work", Role: "developer", GoalID: &g.ID, State: models.TaskInProgress, CreatorID: e.lead.ID, BuilderID: &e.worker.ID}
	e.must(e.db.CreateTask(e.ctx, tk))
	lander := landedSet{}
	check := func(step string, wantOK bool, why string) {
		t.Helper()
		m, err := e.svc.Merges.GoalMergeable(e.ctx, g.ID, lander)
		e.must(err)
		if m.OK != wantOK || !strings.Contains(m.Reason, why) {
			t.Fatalf("%s: %+v, want ok=%v and a reason with %q", step, m, wantOK, why)
		}
	}
	if m, _ := e.svc.Merges.GoalMergeable(e.ctx, g.ID, nil); m.OK || m.Reason == "" {
		t.Fatalf("without a lander: %+v", m)
	}
	check("open", false, "tasks still open")
	g.State = models.GoalVerified
	e.must(e.db.UpdateGoal(e.ctx, g))
	tk.State = models.TaskVerified
	e.must(e.db.UpdateTask(e.ctx, tk))
	check("no commit", false, "Nothing verified to merge")
	tk.Branch, tk.Commit = "countersign/task-1", strings.Repeat("ab", 20)
	e.must(e.db.UpdateTask(e.ctx, tk))
	check("a commit to land", true, "")
	lander[tk.ID] = true
	check("landed", false, "Already merged")
}
