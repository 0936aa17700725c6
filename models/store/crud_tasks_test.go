package store_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
)

// fullContract sets every field of a contract.
func fullContract() contract.Contract {
	return contract.Contract{
		Completion: contract.Completion{
			Type: contract.CompletionFile, Path: "feature/{task_id}/output.md", MinLength: 100,
			Signal: "approved", DoneToken: "TASK_COMPLETE", Verify: []string{"go test ./...", "go vet ./..."},
			VerifyTimeout: contract.Duration{Duration: 5 * time.Minute}, Evaluate: "Must address every criterion.",
			MaxAttempts: 2, Timeout: contract.Duration{Duration: 30 * time.Minute}, Cooldown: contract.Duration{Duration: time.Second},
			Clean: true, Checklist: &contract.Checklist{Path: "TODO.md", Count: 3},
		},
		Verification: contract.Verification{
			Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{
				{Activity: "unit-test", Description: "Toggle renders", Pattern: "DarkModeToggle", Timing: "immediate", Command: "go test"},
				{Activity: "typecheck", Description: "No type errors"},
				{Activity: "vet", Description: "go vet reports no problems (go.mod found)", Command: "go vet ./...", Stack: "go", Tools: []string{"go"}},
			},
			GeneratedFrom: "auto", GeneratedAt: tsp(9), Workspace: contract.WorkspaceDetected, Stacks: []string{"go", "node"},
		},
		Review: &contract.Review{Role: "reviewer", When: []string{"always"}, Every: 2, MaxRounds: 3, OnExhausted: contract.OnExhaustedProceed},
	}
}

func TestTasksRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		dev := agent(t, db, "dev", "developer")
		rev := agent(t, db, "rev", "reviewer")
		g := &models.Goal{Title: "G", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		tmpl := &models.Template{Name: "wf", Steps: []models.Step{{Role: "developer", Brief: "b"}}, CreatorID: boss.ID}
		must(t, db.CreateTemplate(ctx, tmpl))
		run := &models.Run{GoalID: g.ID, TemplateName: "wf", TemplateVersion: 1, CreatorID: boss.ID}
		must(t, db.CreateRun(ctx, run))
		dep1 := task(t, db, boss.ID, "developer", &g.ID)
		dep2 := task(t, db, boss.ID, "developer", nil)

		tk := &models.Task{
			GoalID: &g.ID, RunID: &run.ID, StepNum: 2, Title: "Build toggle", Brief: "Do it",
			Role: "developer", State: models.TaskCompleted, Priority: 7, Approve: "reviewer", Verify: "lead",
			Contract: fullContract(), DependsOn: []int64{dep2.ID, dep1.ID, dep2.ID}, CreatorID: boss.ID, ParentTaskID: &dep1.ID,
			SpawnedBy:  &dep2.ID,
			AssigneeID: &dev.ID, BuilderID: &dev.ID, ApproverID: &rev.ID, VerifierID: &boss.ID,
			Summary: "done", FilesChanged: "a.go", Notes: "ok", Reason: "fix x", Rejections: 1,
			AttemptsUsed: 2, Override: true, LeaseOwner: "runner-a", LeaseUntil: tsp(8),
			CreatedAt: ts(1), UpdatedAt: ts(2), VerifiedAt: tsp(3),
			Branch: "countersign/task-1", Base: strings.Repeat("a", 40), Commit: strings.Repeat("b", 40),
			Fingerprint: &models.Fingerprint{Dir: "/w/tasks/1", Git: true, Output: "out.md", Truncated: true, At: ts(4),
				Files: []models.FingerprintFile{{Path: "out.md", Hash: strings.Repeat("c", 40)}, {Path: "gone.go"}}},
			Drift:     &models.Drift{At: ts(5), Changed: []string{"out.md"}},
			Triage:    &models.Triage{Status: models.TriageEscalate, At: ts(6), Summary: "stuck", Recommend: models.RecommendCancel},
			Questions: []models.Question{{Text: "Which?", Attempt: 1, AskedAt: ts(7), Answer: "That one", AnsweredBy: "boss", AnsweredAt: tsp(8)}},
			ReviewOf:  &dep1.ID, ReviewWarnings: "outstanding: the rollback plan", Canary: models.CanaryGo,
		}
		allSet(t, tk, "ID")
		want := *tk
		want.Contract = fullContract()
		want.DependsOn = []int64{dep1.ID, dep2.ID} // sorted, de-duplicated
		must(t, db.CreateTask(ctx, tk))
		want.ID = tk.ID
		equal(t, "task after CreateTask", tk, &want)
		got, err := db.GetTask(ctx, tk.ID)
		must(t, err)
		equal(t, "GetTask", got, &want)

		tk.State, tk.LeaseUntil, tk.LeaseOwner, tk.AssigneeID = models.TaskInProgress, nil, "", nil
		want = *tk
		tk.DependsOn = []int64{dep1.ID} // fixed at creation: not saved
		must(t, db.UpdateTask(ctx, tk))
		recent(t, tk.UpdatedAt)
		want.UpdatedAt = tk.UpdatedAt
		got, err = db.GetTask(ctx, tk.ID)
		must(t, err)
		equal(t, "after UpdateTask", got, &want)

		for _, dep := range []int64{dep1.ID, dep2.ID} {
			deps, err := db.Dependents(ctx, dep)
			must(t, err)
			if len(deps) != 1 || deps[0].ID != tk.ID {
				t.Fatalf("Dependents(%d) after UpdateTask = %v", dep, deps)
			}
		}

		some, err := db.GetTasks(ctx, []int64{tk.ID, 4242, dep1.ID})
		must(t, err)
		if len(some) != 2 || some[0].ID != dep1.ID || some[1].ID != tk.ID {
			t.Fatalf("GetTasks = %v", some)
		}
		equal(t, "GetTasks[1]", &some[1], &want)

		checkAddDependency(t, ctx, db, tk.ID, dep1.ID, dep2.ID, boss.ID)

		wantCode(t, db.UpdateTask(ctx, &models.Task{ID: 4242, Title: "x", Role: "r", CreatorID: boss.ID}), models.ENOTFOUND)
		_, err = db.GetTask(ctx, 4242)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.CreateTask(ctx, &models.Task{Title: "x", Role: "r", CreatorID: boss.ID, DependsOn: []int64{4242}}), models.EINVALID)
	})
}

// checkAddDependency adds dependencies to task tkID (created depending on dep1ID
// and dep2ID), outside and inside a transaction; split out of TestTasksRoundTrip
// to keep it short.
func checkAddDependency(t *testing.T, ctx context.Context, db *store.DB, tkID, dep1ID, dep2ID, bossID int64) {
	t.Helper()
	// A fix the runner found the task needs is the one added dependency.
	fix := task(t, db, bossID, "developer", nil)
	must(t, db.AddDependency(ctx, tkID, fix.ID))
	must(t, db.AddDependency(ctx, tkID, fix.ID)) // once is enough
	got, err := db.GetTask(ctx, tkID)
	must(t, err)
	if !slices.Equal(got.DependsOn, []int64{dep1ID, dep2ID, fix.ID}) {
		t.Fatalf("DependsOn after AddDependency = %v", got.DependsOn)
	}
	if deps, err := db.Dependents(ctx, fix.ID); err != nil || len(deps) != 1 || deps[0].ID != tkID {
		t.Fatalf("Dependents(fix) = %v, %v", deps, err)
	}
	// In a transaction, LockTask tells Dependents when none exist, until one is added.
	lone := task(t, db, bossID, "developer", nil)
	must(t, db.InTx(ctx, func(tx models.Tx) error {
		for _, c := range []struct {
			id   int64
			want int
		}{{dep1ID, 1}, {lone.ID, 0}} {
			locked, err := tx.LockTask(ctx, c.id)
			if err != nil {
				return err
			}
			if got, _ := tx.GetTask(ctx, c.id); c.id == dep1ID && !reflect.DeepEqual(locked, got) {
				t.Errorf("LockTask = %+v, GetTask = %+v", locked, got)
			}
			if deps, err := tx.Dependents(ctx, c.id); err != nil || len(deps) != c.want {
				t.Errorf("Dependents(%d) after LockTask = %v, %v; want %d", c.id, deps, err, c.want)
			}
		}
		if err := tx.AddDependency(ctx, tkID, lone.ID); err != nil {
			return err
		}
		if deps, err := tx.Dependents(ctx, lone.ID); err != nil || len(deps) != 1 || deps[0].ID != tkID {
			t.Errorf("Dependents(lone) after AddDependency in the transaction = %v, %v", deps, err)
		}
		return nil
	}))
	wantCode(t, db.AddDependency(ctx, tkID, 4242), models.EINVALID)
	wantCode(t, db.AddDependency(ctx, 4242, fix.ID), models.ENOTFOUND)
}

func TestListAndCountTasks(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		dev := agent(t, db, "dev", "developer")
		g := &models.Goal{Title: "G", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		var ids []int64
		for i := 0; i < 7; i++ {
			tk := &models.Task{Title: "t", Role: "developer", CreatorID: boss.ID}
			if i%2 == 0 {
				tk.GoalID = &g.ID
			}
			if i < 3 {
				tk.State, tk.AssigneeID = models.TaskAssigned, &dev.ID
			}
			if i == 6 {
				tk.Role = "tester"
			}
			must(t, db.CreateTask(ctx, tk))
			ids = append(ids, tk.ID)
		}
		list := func(f models.TaskFilter) []int64 {
			t.Helper()
			ts, err := db.ListTasks(ctx, f)
			must(t, err)
			out := []int64{}
			for _, tk := range ts {
				out = append(out, tk.ID)
			}
			return out
		}
		rev := func(xs ...int64) []int64 { return xs }
		cases := []struct {
			f    models.TaskFilter
			want []int64
		}{
			{models.TaskFilter{}, rev(ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0])},
			{models.TaskFilter{Limit: 2}, rev(ids[6], ids[5])},
			{models.TaskFilter{Limit: 2, AfterID: ids[5]}, rev(ids[4], ids[3])},
			{models.TaskFilter{State: models.TaskAssigned}, rev(ids[2], ids[1], ids[0])},
			{models.TaskFilter{GoalID: g.ID}, rev(ids[6], ids[4], ids[2], ids[0])},
			{models.TaskFilter{AssigneeID: dev.ID, GoalID: g.ID}, rev(ids[2], ids[0])},
			{models.TaskFilter{Role: "tester"}, rev(ids[6])},
			{models.TaskFilter{Role: "developer", State: models.TaskPending}, rev(ids[5], ids[4], ids[3])},
		}
		for _, c := range cases {
			if got := list(c.f); !slices.Equal(got, c.want) {
				t.Errorf("ListTasks(%+v) = %v, want %v", c.f, got, c.want)
			}
		}

		counts, err := db.CountTasks(ctx, 0)
		must(t, err)
		if counts[models.TaskAssigned] != 3 || counts[models.TaskPending] != 4 || counts[models.TaskVerified] != 0 || len(counts) != len(models.TaskStates) {
			t.Fatalf("CountTasks(0) = %v", counts)
		}
		counts, err = db.CountTasks(ctx, g.ID)
		must(t, err)
		if counts[models.TaskAssigned] != 2 || counts[models.TaskPending] != 2 {
			t.Fatalf("CountTasks(goal) = %v", counts)
		}
	})
}

func TestTemplatesAndRuns(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		c := fullContract()
		step := models.Step{Name: "build", Role: "developer", Brief: "Build it", Approve: "reviewer", Verify: "lead",
			Completion: c.Completion, Verification: c.Verification, Review: c.Review, Budget: &contract.Budget{MaxCostUSD: ptr(2.0)}, Parallel: "checks"}
		allSet(t, &step)
		v1 := &models.Template{Name: "feature", Version: 7, Description: "d1", Steps: []models.Step{step}, CreatorID: boss.ID, CreatedAt: ts(1)}
		wantV1 := *v1
		wantV1.Steps = []models.Step{step}
		must(t, db.CreateTemplate(ctx, v1))
		if v1.Version != 1 || v1.ID == 0 {
			t.Fatalf("first version = %d (id %d), want 1", v1.Version, v1.ID)
		}
		wantV1.ID, wantV1.Version = v1.ID, 1
		allSet(t, &wantV1)
		v2 := &models.Template{Name: "feature", Description: "d2", CreatorID: boss.ID}
		must(t, db.CreateTemplate(ctx, v2))
		if v2.Version != 2 || v2.Steps == nil {
			t.Fatalf("second version = %d, steps %v; want 2, non-nil", v2.Version, v2.Steps)
		}
		other := &models.Template{Name: "alpha", Steps: []models.Step{{Role: "ba", Brief: "x"}}, CreatorID: boss.ID}
		must(t, db.CreateTemplate(ctx, other))

		got, err := db.GetTemplate(ctx, "feature", 1)
		must(t, err)
		equal(t, "GetTemplate v1", got, &wantV1)
		got, err = db.GetTemplate(ctx, "feature", 0)
		must(t, err)
		equal(t, "GetTemplate latest", got, v2)
		_, err = db.GetTemplate(ctx, "feature", 3)
		wantCode(t, err, models.ENOTFOUND)
		_, err = db.GetTemplate(ctx, "nope", 0)
		wantCode(t, err, models.ENOTFOUND)

		latest, err := db.ListTemplates(ctx)
		must(t, err)
		if len(latest) != 2 {
			t.Fatalf("ListTemplates = %d templates, want 2", len(latest))
		}
		equal(t, "ListTemplates[0]", &latest[0], other)
		equal(t, "ListTemplates[1]", &latest[1], v2)
		versions, err := db.ListTemplateVersions(ctx, "feature")
		must(t, err)
		if len(versions) != 2 || versions[0].Version != 1 || versions[1].Version != 2 {
			t.Fatalf("ListTemplateVersions = %+v", versions)
		}

		g := &models.Goal{Title: "G", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		r := &models.Run{GoalID: g.ID, TemplateName: "feature", TemplateVersion: 2, Params: map[string]string{"feature": "dark mode"}, CreatorID: boss.ID, CreatedAt: ts(4)}
		allSet(t, r, "ID")
		wantR := *r
		wantR.Params = map[string]string{"feature": "dark mode"}
		must(t, db.CreateRun(ctx, r))
		wantR.ID = r.ID
		gr, err := db.GetRun(ctx, r.ID)
		must(t, err)
		equal(t, "GetRun", gr, &wantR)
		_, err = db.GetRun(ctx, 4242)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.CreateRun(ctx, &models.Run{GoalID: g.ID, TemplateName: "feature", TemplateVersion: 9, CreatorID: boss.ID}), models.EINVALID)
	})
}

func TestAttemptsRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		tk := task(t, db, boss.ID, "developer", nil)
		a := &models.Attempt{
			TaskID: tk.ID, Number: 1, AgentID: boss.ID, RunnerID: "host-1", Outcome: models.OutcomeFailed,
			Stage: models.StageVerify, Diagnosis: "go test failed",
			Checks: []models.CheckResult{{Stage: models.StageProcess, Verdict: models.VerdictPass, DurationMS: 5},
				{Stage: models.StageVerify, Verdict: models.VerdictFail, Diagnosis: "exit 1", DurationMS: 900}},
			Criteria: []models.CriterionResult{{Activity: "unit-test", Command: "go test", Status: "fail", Error: "exit 1", Attempts: 2, DurationMS: 800}},
			Judge: &models.JudgeReport{Base: "snapshot", Restored: true, PrepareMS: 3,
				Protected: []models.ProtectedChange{{Path: "calc_test.go", Change: models.ChangeChanged, Diff: "-a\n+b"}},
				Floor:     &models.TestFloor{AtBase: 2, Run: 1, Passed: 1, Missing: 1, NotRun: []string{"TestAdd"}},
				HeldOut:   &models.HeldOutReport{Files: 1, Failed: []string{"TestBig: want 14"}}},
			Deliverable: &models.Deliverable{Files: []models.DeliverableFile{{Path: "out/report.md", Size: 12, SHA256: "ab12"}},
				Truncated: true, Omitted: 3},
			ExitCode: 3, OutputTail: "FAIL", OutputHash: "abc", LogPath: "/data/logs/1.log", Brief: "brief", Triage: true,
			StartedAt: ts(1), FinishedAt: tsp(2),
			Usage: &models.Usage{InputTokens: ptr(int64(1200)), OutputTokens: ptr(int64(340)), CacheReadTokens: ptr(int64(5)),
				CacheWriteTokens: ptr(int64(7)), CostUSD: ptr(0.0123), CostSource: models.CostPriced,
				Price: &models.ModelPrice{Pattern: "claude-x.*", InputPerMTok: 3, OutputPerMTok: 15}, Turns: ptr(4),
				Model: "claude-x-1", SessionID: "s-1", Note: "n", Source: models.UsageMetered,
				Reported: &models.Usage{InputTokens: ptr(int64(90)), CostUSD: ptr(0.001), Turns: ptr(4)},
				Mismatch: "the worker reported a cost of $0.0010; the gateway metered $0.0123"},
			Network: &models.NetworkLog{Allow: []string{"proxy.golang.org"}, Dropped: 2, Allowed: 2, Denied: 1, BytesUp: 300, BytesDown: 9000,
				Entries: []models.NetworkEntry{
					{At: ts(1), Method: "CONNECT", Host: "proxy.golang.org", Port: 443, Allowed: true, Up: 300, Down: 9000, MS: 120},
					{At: ts(2), Method: "GET", Host: "evil.example", Port: 80, Reason: "not in the allowlist", MS: 1}}},
			ReservedUSD: ptr(1.5), ReservedTokens: ptr(int64(1000)),
		}
		allSet(t, a, "ID")
		want := *a
		want.Checks = slices.Clone(a.Checks)
		want.Criteria = slices.Clone(a.Criteria)
		must(t, db.CreateAttempt(ctx, a))
		want.ID = a.ID
		a2 := &models.Attempt{TaskID: tk.ID, Number: 2, AgentID: boss.ID}
		must(t, db.CreateAttempt(ctx, a2))
		if a2.Outcome != models.OutcomeRunning || a2.Checks == nil || a2.Criteria != nil || a2.StartedAt.IsZero() {
			t.Fatalf("defaults of a new attempt: %+v", a2)
		}
		a2.Outcome, a2.FinishedAt = models.OutcomePassed, tsp(5)
		a2.Checks = []models.CheckResult{{Stage: models.StageProcess, Verdict: models.VerdictPass}}
		want2 := *a2
		want2.Checks = []models.CheckResult{{Stage: models.StageProcess, Verdict: models.VerdictPass}}
		must(t, db.UpdateAttempt(ctx, a2))
		list, err := db.ListAttempts(ctx, tk.ID)
		must(t, err)
		if len(list) != 2 {
			t.Fatalf("ListAttempts = %d, want 2", len(list))
		}
		equal(t, "attempt 1", &list[0], &want)
		equal(t, "attempt 2", &list[1], &want2)
		wantCode(t, db.UpdateAttempt(ctx, &models.Attempt{ID: 4242, TaskID: tk.ID, AgentID: boss.ID}), models.ENOTFOUND)
		wantCode(t, db.CreateAttempt(ctx, &models.Attempt{TaskID: 4242, AgentID: boss.ID}), models.EINVALID)
	})
}

// TestListTaskHeadsOfAGoal: ListTaskHeads lists one goal's tasks, newest first, with
// what the goal page's runs need (run, step, reviewed task, override).
func TestListTaskHeadsOfAGoal(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		g := &models.Goal{Title: "G", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		must(t, db.CreateTemplate(ctx, &models.Template{Name: "wf", Steps: []models.Step{{Role: "developer", Brief: "b"}}, CreatorID: boss.ID}))
		run := &models.Run{GoalID: g.ID, TemplateName: "wf", TemplateVersion: 1, CreatorID: boss.ID}
		must(t, db.CreateRun(ctx, run))
		step := &models.Task{GoalID: &g.ID, RunID: &run.ID, StepNum: 1, Title: "step", Role: "developer", CreatorID: boss.ID, Override: true}
		must(t, db.CreateTask(ctx, step))
		task(t, db, boss.ID, "developer", nil) // no goal: not listed
		fix := &models.Task{GoalID: &g.ID, ReviewOf: &step.ID, Title: "fix", Role: "developer", CreatorID: boss.ID}
		must(t, db.CreateTask(ctx, fix))
		got, err := db.ListTaskHeads(ctx, models.TaskFilter{GoalID: g.ID, Limit: 10})
		must(t, err)
		if len(got) != 2 || got[0].ID != fix.ID || got[1].ID != step.ID {
			t.Fatalf("ListTaskHeads of the goal = %+v, want the fix then the step", got)
		}
		if got[0].ReviewOf == nil || *got[0].ReviewOf != step.ID || got[1].RunID == nil || *got[1].RunID != run.ID ||
			got[1].StepNum != 1 || !got[1].Override {
			t.Fatalf("heads lack the run, step, review or override: %+v", got)
		}
	})
}
