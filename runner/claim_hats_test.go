package runner

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestClaimPassesOverAnAgentItsHatRefuses: with a hat declared as a role (auditor,
// which conflicts with builder), an idle worker holding that role can never start the
// task, and it is the one the claim picks first (the oldest of two idle agents). The
// claim must try the next agent with the role rather than skip the task on every wake:
// the other worker builds it. Without the fallback the task stays pending.
func TestClaimPassesOverAnAgentItsHatRefuses(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	rules, err := h.db.GetRules(h.ctx)
	must(t, err)
	rules.Hats = append(models.DefaultHats(), models.Hat{Name: "auditor", ConflictsWith: []string{models.HatBuilder}})
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, rules))
	h.worker("auditing-dev", "dev", script(t, "ok.sh"), func(a *models.Agent) { a.Roles = []string{"dev", "auditor"} })
	plain := h.worker("plain-dev", "dev", script(t, "ok.sh"))
	task := h.task("Write the notes", "dev", fileContract())
	h.start()
	got := h.settled(task.ID, 20*time.Second)
	if got.State != models.TaskVerified {
		t.Fatalf("task is %s, want verified by the agent without the conflicting hat", got.State)
	}
	if got.BuilderID == nil || *got.BuilderID != plain.ID {
		t.Fatalf("builder %v, want plain-dev (%d)", got.BuilderID, plain.ID)
	}
}
