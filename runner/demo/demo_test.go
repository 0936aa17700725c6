package demo

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/workspace"
)

// TestSeedRunsToEveryOutcome seeds an empty database, runs the pool on it, and checks
// that the demo produces what the dashboard pages show: a revision that verified, a
// signal, an advisory inbox item, a blocked task, a task waiting for the tester.
func TestSeedRunsToEveryOutcome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := storetest.Open(t, "sqlite")
	svc := models.NewService(db, ledger.Composer{})
	dataDir := t.TempDir()
	seedTwice(t, ctx, svc, db, dataDir)
	ws, err := workspace.New(filepath.Join(dataDir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := runner.New(runner.Config{Service: svc, Workspaces: ws, RunnerID: "demo-test", Poll: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(context.Background())

	want := map[string]models.TaskState{
		"Draft the onboarding guide":      models.TaskVerified,
		"Review the guide":                models.TaskVerified,
		"Investigate onboarding drop-off": models.TaskVerified,
		"Publish the guide":               models.TaskBlocked,
		"Proofread the release notes":     models.TaskCompleted,
	}
	deadline := time.Now().Add(60 * time.Second)
	var tasks []models.Task
	for {
		tasks, err = db.ListTasks(ctx, models.TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		done := len(tasks) == len(want)
		for _, tk := range tasks {
			if want[tk.Title] != tk.State {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			for _, tk := range tasks {
				atts, _ := db.ListAttempts(ctx, tk.ID)
				t.Logf("%s: %s %+v", tk.Title, tk.State, atts)
			}
			t.Fatal("the demo did not reach every outcome within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tk := range tasks {
		atts, _ := db.ListAttempts(ctx, tk.ID)
		if tk.Title == "Draft the onboarding guide" && (len(atts) != 2 || atts[0].Stage != models.StageMechanical) {
			t.Errorf("the writer did not revise: %+v", atts)
		}
		if tk.Title == "Publish the guide" && (len(atts) != 2 || atts[1].Stage != models.StageContradiction) {
			t.Errorf("publishing did not block on the contradiction: %+v", atts)
		}
		if tk.Title == "Investigate onboarding drop-off" {
			// The demo's workers report usage as any worker may; the runner prices it.
			if u := atts[len(atts)-1].Usage; u == nil || u.CostUSD == nil || u.CostSource != models.CostPriced || *u.CostUSD <= 0 {
				t.Errorf("the demo's usage was not recorded and priced: %+v", u)
			}
		}
	}
	for kind, n := range map[string]int{models.InboxAdvisory: 1, models.InboxBlocked: 1} {
		items, _ := db.ListInbox(ctx, models.InboxFilter{Kind: kind})
		if len(items) != n {
			t.Errorf("%d %s inbox items, want %d", len(items), kind, n)
		}
	}
	personsFinish(t, ctx, svc, tasks)
}

// personsFinish: each task left waits on a named person (the tester verifies, the
// demo lead decides the blocked one), their queues say so, and once they act the goal
// waits for the lead's verification, in the lead's queue.
func personsFinish(t *testing.T, ctx context.Context, svc *models.Service, tasks []models.Task) {
	t.Helper()
	by := map[string]*models.Task{}
	for i := range tasks {
		by[tasks[i].Title] = &tasks[i]
	}
	proof, publish := by["Proofread the release notes"], by["Publish the guide"]
	w, err := svc.Queue.WaitingFor(ctx, proof)
	if err != nil || w == nil || w.Action != models.ActVerify || !slices.Equal(w.Roles, []string{"tester"}) || !slices.Equal(w.Names, []string{TesterName}) {
		t.Fatalf("the proofreading waits for %+v (%v), want the tester role (%s)", w, err, TesterName)
	}
	tess, err := svc.Store().GetAgentByName(ctx, TesterName)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := svc.Store().GetAgentByName(ctx, LeadName)
	if err != nil {
		t.Fatal(err)
	}
	inQueue := func(a *models.Agent, kind string) bool {
		items, err := svc.Queue.WaitingOn(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(items, func(it models.QueueItem) bool { return it.Kind == kind })
	}
	if !inQueue(tess, models.QueueVerify) || !inQueue(lead, models.InboxBlocked) {
		t.Fatal("the tester's or the lead's queue misses its task")
	}
	if _, err := svc.Tasks.TaskAction(ctx, tess, proof.ID, models.ActVerify, models.ActionInput{Notes: "read it"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tasks.TaskAction(ctx, lead, publish.ID, models.ActAccept, models.ActionInput{Reason: "published by hand"}); err != nil {
		t.Fatal(err)
	}
	if g, err := svc.Store().GetGoal(ctx, *proof.GoalID); err != nil || g.State != models.GoalPendingVerify {
		t.Fatalf("the demo goal: %+v %v, want pending_verify", g, err)
	}
	if !inQueue(lead, models.QueueGoal) {
		t.Error("the lead's queue misses the demo goal")
	}
}

// seedTwice seeds the demo, checks its scripts, and seeds it again, which must add no
// agent.
func seedTwice(t *testing.T, ctx context.Context, svc *models.Service, db *store.DB, dataDir string) {
	t.Helper()
	people, err := Seed(ctx, svc, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	checkPeople(t, ctx, db, people)
	for _, s := range []string{"writer.sh", "developer.sh", "reviewer.sh", "ops.sh"} {
		fi, err := os.Stat(filepath.Join(dataDir, "demo", s))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("script %s: %v %v", s, fi, err)
		}
	}
	agents, _ := db.ListAgents(ctx)
	if again, err := Seed(ctx, svc, dataDir); err != nil || len(again) != 0 {
		t.Fatalf("second seed: %v, people %v", err, again)
	}
	if again, _ := db.ListAgents(ctx); len(again) != len(agents) {
		t.Fatalf("second seed added agents: %d → %d", len(agents), len(again))
	}
}

// checkPeople: every person the demo created (the tester at least) signs in with the
// one-time password Seed returned.
func checkPeople(t *testing.T, ctx context.Context, db *store.DB, people []Person) {
	t.Helper()
	var tester bool
	for _, p := range people {
		a, err := db.GetAgentByName(ctx, p.Name)
		if err != nil || a.Kind != models.KindHuman || !a.CheckPassword(p.Password) || len(p.Roles) == 0 {
			t.Fatalf("demo person %s cannot sign in with %q: %v", p.Name, p.Password, err)
		}
		tester = tester || p.Name == TesterName
	}
	if !tester {
		t.Fatalf("the tester has no password: %+v", people)
	}
}
