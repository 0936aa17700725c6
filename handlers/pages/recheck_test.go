package pages_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestRecheckFromTheTaskPage: the task page says how the task was verified (the
// ledger's kind) and links its chain; a lead's Recheck finds the changed output and
// the page then shows the task stale; a developer gets no button and a refusal that
// changes nothing.
func TestRecheckFromTheTaskPage(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := e.ctx()
	g := &models.Goal{Title: "Reports"}
	must(t, e.svc.Goals.CreateGoal(ctx, models.System, g))
	tk := e.humanTask("Report", &g.ID, models.TaskVerified)
	ws := t.TempDir()
	out := []byte("the verified report\n")
	must(t, os.WriteFile(filepath.Join(ws, "report.md"), out, 0o644))
	sum := sha256.Sum256(out)
	stored, err := e.db.GetTask(ctx, tk.ID)
	must(t, err)
	stored.Fingerprint = &models.Fingerprint{Dir: ws, Output: "report.md", At: time.Now(),
		Files: []models.FingerprintFile{{Path: "report.md", Hash: hex.EncodeToString(sum[:])}}}
	must(t, e.db.UpdateTask(ctx, stored))
	path := "/tasks/" + itoa64(tk.ID)

	lead := e.browser().login("lead")
	pg := lead.get(path)
	for _, want := range []string{`data-testid="task-verification-kind"`, `data-state="advisory"`, `href="/ledger?task=` + itoa64(tk.ID) + `"`,
		`data-testid="task-recheck"`, "covers 1 file(s)"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the task page lacks %q", want)
		}
	}
	if strings.Contains(pg.Body, ws) {
		t.Fatal("the task page shows the workspace's server path")
	}
	if gp := lead.get("/goals/" + itoa64(g.ID)); !strings.Contains(gp.Body, `data-testid="goal-recheck"`) {
		t.Fatal("the goal page has no Recheck for its lead")
	}

	dev := e.browser().login("dev")
	if strings.Contains(dev.get(path).Body, `data-testid="task-recheck"`) {
		t.Fatal("a developer is offered Recheck")
	}
	must(t, os.WriteFile(filepath.Join(ws, "report.md"), []byte("rewritten\n"), 0o644))
	events := e.eventCount()
	if r := dev.post(path+"/recheck", nil); r.Status != http.StatusForbidden || e.eventCount() != events {
		t.Fatalf("a developer's recheck: %d, events %d → %d", r.Status, events, e.eventCount())
	}

	if r := lead.post(path+"/recheck", nil); r.Status != http.StatusSeeOther {
		t.Fatalf("the lead's recheck: %d", r.Status)
	}
	pg = lead.get(path)
	for _, want := range []string{`data-testid="task-stale"`, `data-testid="task-drift"`, "report.md", "STALE"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("after the recheck the task page lacks %q", want)
		}
	}
	inbox := lead.get("/inbox")
	if !strings.Contains(inbox.Body, "Verified work that changed") || !strings.Contains(inbox.Body, "changed after it was verified: report.md") {
		t.Fatal("the inbox does not show the drift")
	}
}

// TestGoalPageGatesVerifyOnDeferredChecks: while a goal's deferred checks have not
// passed its page offers no Verify form (and a verify POST is refused), shows a
// failure's output, and still offers the rejection with fix tasks.
func TestGoalPageGatesVerifyOnDeferredChecks(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := e.ctx()
	g := &models.Goal{Title: "Checkout"}
	must(t, e.svc.Goals.CreateGoal(ctx, models.System, g))
	e.humanTask("Cart", &g.ID, models.TaskVerified)
	stored, err := e.db.GetGoal(ctx, g.ID)
	must(t, err)
	if stored.State != models.GoalPendingVerify {
		t.Fatalf("goal %s", stored.State)
	}
	stored.Deferred = &models.DeferredChecks{Status: models.DeferredFailed, Diagnosis: "1 of 1 criteria failed",
		Output:   "e2e (npm run e2e):\n<b>checkout button missing</b>",
		Criteria: []models.DeferredCriterion{{TaskID: 1, Criterion: contract.Criterion{Activity: "e2e", Description: "checkout works", Timing: contract.TimingDeferred}}}}
	must(t, e.db.UpdateGoal(ctx, stored))

	lead := e.browser().login("lead")
	pg := lead.get("/goals/" + itoa64(g.ID))
	for _, want := range []string{`data-testid="goal-deferred-status" data-state="failed"`, "&lt;b&gt;checkout button missing&lt;/b&gt;",
		"e2e: checkout works (task #1)", `data-testid="goal-reject-form"`} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the goal page lacks %q", want)
		}
	}
	if strings.Contains(pg.Body, `data-testid="goal-verify-form"`) {
		t.Fatal("the goal page offers Verify past failed deferred checks")
	}
	events := e.eventCount()
	lead.post("/goals/"+itoa64(g.ID)+"/verify", url.Values{"notes": {"ship it"}})
	if after, _ := e.db.GetGoal(ctx, g.ID); after.State != models.GoalPendingVerify || e.eventCount() != events {
		t.Fatalf("a verify POST past failed deferred checks: %s, events %d → %d", after.State, events, e.eventCount())
	}
}
