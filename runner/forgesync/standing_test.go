package forgesync

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/ledger"
)

// TestDesiredStatus: the verified commit's status follows the task — success only
// while it is verified, not stale and its task.complete stands (and every step it
// builds on does, and none was verified again after it); pending while a person's
// verification waits; failure otherwise, naming why.
func TestDesiredStatus(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, "sqlite")
	svc := models.NewService(db, ledger.Composer{})
	forges, err := models.NewForges(svc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Service: svc, Forges: forges})
	if err != nil {
		t.Fatal(err)
	}
	boss := &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleLead}}
	if err := svc.Agents.CreateAgent(ctx, models.System, boss, ""); err != nil {
		t.Fatal(err)
	}
	mk := func(state models.TaskState, mut func(*models.Task)) *models.Task {
		tk := &models.Task{Title: "t", Role: "developer", State: state, CreatorID: boss.ID, Verify: "lead", Commit: strings.Repeat("a", 40)}
		if mut != nil {
			mut(tk)
		}
		if err := db.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	now := time.Now()
	later := now.Add(time.Minute)
	verified := mk(models.TaskVerified, func(tk *models.Task) { tk.VerifiedAt = &now })
	cases := []struct {
		name  string
		task  *models.Task
		state forge.State
		says  string
	}{
		{"completed", mk(models.TaskCompleted, nil), forge.StatePending, "awaiting a person's verification"},
		{"stale", mk(models.TaskVerified, func(tk *models.Task) { tk.Drift = &models.Drift{At: now, Changed: []string{"a.go"}} }), forge.StateFailure, "Stale"},
		{"reopened", mk(models.TaskInProgress, nil), forge.StateFailure, "reopened"},
		{"cancelled", mk(models.TaskCancelled, nil), forge.StateFailure, "cancelled"},
		{"no standing entry", verified, forge.StateFailure, "withdrawn"},
		{"a step not verified", mk(models.TaskVerified, func(tk *models.Task) {
			tk.DependsOn = []int64{mk(models.TaskInProgress, nil).ID}
		}), forge.StateFailure, "Step: "},
		{"a step verified again later", mk(models.TaskVerified, func(tk *models.Task) {
			tk.VerifiedAt, tk.DependsOn = &now, []int64{mk(models.TaskVerified, func(d *models.Task) { d.VerifiedAt = &later }).ID}
		}), forge.StateFailure, "Step: "},
	}
	for _, c := range cases {
		state, desc, err := s.desired(ctx, c.task)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if state != c.state || !strings.Contains(desc, c.says) {
			t.Errorf("%s: %s %q, want %s saying %q", c.name, state, desc, c.state, c.says)
		}
	}
}
