package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// statsNow is the seeded history's "now": its 7-day window is 3 to 9 March 2025.
var statsNow = time.Date(2025, 3, 9, 12, 0, 0, 0, time.UTC)

// day is a time on March d, 2025 at h:m UTC.
func day(d, h, m int) time.Time { return time.Date(2025, 3, d, h, m, 0, 0, time.UTC) }

// statsHistory seeds a history whose scorecard figures are known:
//
// w1 (role dev tasks 1–3, role qa task 4, and task 5 before the window):
//
//	task 1: one attempt passed (10m), verified on the 4th  → first pass
//	task 2: failed at verify (20m), passed (30m), verified on the 5th  → revised, verified
//	task 3: failed twice at verify (5m, 5m), blocked on the 6th at verify  → revised, blocked (work)
//	task 4: two infrastructure failures, blocked on the 7th at infrastructure  → blocked (infrastructure)
//	task 5: passed on 1 March, before the window  → not counted
//
// w2: task 6 (dev): passed, rejected by its verifier, passed again, verified on the
// 8th → revised; and task 7 (dev) still running.
//
// So w1 took 4 tasks: first pass 1/4, revised 2/4, blocked 2/4 (work 1/4,
// infrastructure 1/4); durations 5, 5, 10, 20, 30 minutes: median 10m, p90 30m;
// spend $1.00 and 10,500 tokens with one attempt of unknown cost.
type statsHistory struct {
	w1, w2 *models.Agent
}

func seedStats(t *testing.T, ctx context.Context, db *store.DB) statsHistory {
	t.Helper()
	h := statsHistory{w1: agent(t, db, "w1", "dev"), w2: agent(t, db, "w2", "dev")}
	type att struct {
		outcome, stage string
		start          time.Time
		minutes        int
		cost           *float64
		tokens         *int64
	}
	mk := func(role string, who *models.Agent, state models.TaskState, rejections int, verified *time.Time, atts ...att) *models.Task {
		tk := task(t, db, who.ID, role, nil)
		tk.State, tk.Rejections, tk.VerifiedAt = state, rejections, verified
		must(t, db.UpdateTask(ctx, tk))
		for i, a := range atts {
			row := &models.Attempt{TaskID: tk.ID, Number: i + 1, AgentID: who.ID, Outcome: a.outcome, Stage: a.stage, StartedAt: a.start}
			if a.outcome != models.OutcomeRunning {
				end := a.start.Add(time.Duration(a.minutes) * time.Minute)
				row.FinishedAt = &end
			}
			if a.cost != nil || a.tokens != nil {
				row.Usage = &models.Usage{CostUSD: a.cost, InputTokens: a.tokens, Model: "m"}
			}
			must(t, db.CreateAttempt(ctx, row))
		}
		return tk
	}
	block := func(tk *models.Task, who *models.Agent, stage string, at time.Time) {
		p, _ := json.Marshal(models.BlockedPayload{Type: models.LedgerTaskBlocked, TaskID: tk.ID, Agent: who.Name,
			Attempts: []models.BlockedAttempt{{Attempt: 1, Stage: stage, Failure: "x"}}})
		must(t, db.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxBlocked, TaskID: tk.ID, Title: "blocked", Payload: p, CreatedAt: at}))
	}
	f := func(v float64) *float64 { return &v }
	pass, fail, infra := models.OutcomePassed, models.OutcomeFailed, models.OutcomeInfra
	mk("dev", h.w1, models.TaskVerified, 0, ptr(day(4, 10, 15)), att{pass, "", day(4, 10, 0), 10, f(0.10), i64(1000)})
	mk("dev", h.w1, models.TaskVerified, 0, ptr(day(5, 12, 0)),
		att{fail, models.StageVerify, day(5, 10, 0), 20, f(0.20), i64(2000)}, att{pass, "", day(5, 11, 0), 30, f(0.30), i64(3000)})
	t3 := mk("dev", h.w1, models.TaskBlocked, 0, nil,
		att{fail, models.StageVerify, day(6, 10, 0), 5, f(0.40), i64(4000)}, att{fail, models.StageVerify, day(6, 11, 0), 5, nil, i64(500)})
	block(t3, h.w1, models.StageVerify, day(6, 11, 10))
	t4 := mk("qa", h.w1, models.TaskBlocked, 0, nil,
		att{infra, models.StageInfra, day(7, 10, 0), 1, nil, nil}, att{infra, models.StageInfra, day(7, 10, 5), 1, nil, nil})
	block(t4, h.w1, models.StageInfra, day(7, 10, 10))
	mk("dev", h.w1, models.TaskVerified, 0, ptr(day(1, 11, 0)), att{pass, "", day(1, 10, 0), 10, f(9), nil})
	mk("dev", h.w2, models.TaskVerified, 1, ptr(day(8, 12, 0)),
		att{pass, "", day(8, 9, 0), 40, nil, nil}, att{pass, "", day(8, 11, 0), 40, nil, nil})
	mk("dev", h.w2, models.TaskInProgress, 0, nil, att{models.OutcomeRunning, "", day(9, 11, 0), 0, nil, nil})
	return h
}

func rate(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || *got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestScorecardOfSeededHistory(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		h := seedStats(t, ctx, db)
		svc := models.NewService(db, nil)
		svc.SetClock(func() time.Time { return statsNow })

		st, err := svc.Stats.AgentStats(ctx, h.w1, h.w1.ID, 7)
		must(t, err)
		sc := st.Scorecard
		if !sc.Since.Equal(day(3, 0, 0)) {
			t.Fatalf("since = %v, want 3 March", sc.Since)
		}
		if sc.Taken != 4 || sc.Attempts != 7 || sc.Verified != 2 || sc.FirstPass != 1 || sc.Revised != 2 ||
			sc.Blocked != 2 || sc.BlockedWork != 1 || sc.BlockedInfra != 1 || sc.BlockedOther != 0 {
			t.Fatalf("w1's counts: %+v", sc)
		}
		rate(t, "first-pass rate", sc.FirstPassRate, 0.25)
		rate(t, "revision rate", sc.RevisionRate, 0.5)
		rate(t, "block rate", sc.BlockRate, 0.5)
		rate(t, "work block rate", sc.WorkBlockRate, 0.25)
		rate(t, "infrastructure block rate", sc.InfraBlockRate, 0.25)
		if sc.MedianMS == nil || *sc.MedianMS != (10*time.Minute).Milliseconds() || sc.P90MS == nil || *sc.P90MS != (30*time.Minute).Milliseconds() {
			t.Fatalf("median %v, p90 %v; want 10m and 30m", sc.MedianMS, sc.P90MS)
		}
		if sc.Spend.CostUSD != 1.0 || sc.Spend.Tokens != 10500 || sc.Spend.Unpriced != 1 {
			t.Fatalf("spend = %+v, want $1.00, 10500 tokens, 1 unpriced", sc.Spend)
		}
		if len(st.Daily) != 7 {
			t.Fatalf("%d daily bars, want 7", len(st.Daily))
		}
		want := map[int][2]int{4: {1, 0}, 5: {1, 0}, 6: {0, 1}, 7: {0, 1}}
		for _, b := range st.Daily {
			if w := want[b.Day.Day()]; b.Verified != w[0] || b.Blocked != w[1] {
				t.Fatalf("bar of %s = %d verified, %d blocked; want %v", b.Day.Format(time.DateOnly), b.Verified, b.Blocked, w)
			}
		}
		hist := map[string]int{}
		for _, b := range st.Durations {
			hist[b.Label] = b.Count
		}
		if hist["5m–10m"] != 2 || hist["10m–20m"] != 1 || hist["20m–30m"] != 1 || hist["30m–1h"] != 1 {
			t.Fatalf("histogram = %v", hist)
		}
		if len(st.Roles) != 2 || st.Roles[0].Role != "dev" || st.Roles[0].Taken != 3 || st.Roles[1].Role != "qa" || st.Roles[1].BlockedInfra != 1 {
			t.Fatalf("w1's roles: %+v", st.Roles)
		}

		// The 30-day window reaches task 5 (1 March): a fifth take, a first pass.
		st30, err := svc.Stats.AgentStats(ctx, h.w1, h.w1.ID, 30)
		must(t, err)
		if st30.Scorecard.Taken != 5 || st30.Scorecard.FirstPass != 2 || len(st30.Daily) != 30 {
			t.Fatalf("30 days: taken %d, first pass %d, %d bars", st30.Scorecard.Taken, st30.Scorecard.FirstPass, len(st30.Daily))
		}

		checkScoreBoard(t, ctx, svc, h.w1)

		_, err = svc.Stats.AgentStats(ctx, h.w1, h.w1.ID, 14)
		wantCode(t, err, models.EINVALID)
		if fe := err.(*models.Error).Fields["days"]; fe != "must be 7 or 30" {
			t.Fatalf("days error = %q", fe)
		}
	})
}

// checkScoreBoard checks the 7-day board of the seeded history as seen by w1;
// split out of TestScorecardOfSeededHistory to keep it short.
func checkScoreBoard(t *testing.T, ctx context.Context, svc *models.Service, w1 *models.Agent) {
	t.Helper()
	b, err := svc.Stats.ScoreBoard(ctx, w1, 7)
	must(t, err)
	if len(b.Agents) != 2 || b.Agents[0].Agent.Name != "w1" || b.Agents[1].Agent.Name != "w2" {
		t.Fatalf("ranking: %+v", b.Agents)
	}
	w2 := b.Agents[1]
	if w2.Taken != 2 || w2.Verified != 1 || w2.FirstPass != 0 || w2.Revised != 1 {
		t.Fatalf("w2: %+v", w2.Scorecard)
	}
	rate(t, "w2's first-pass rate", w2.FirstPassRate, 0)
	var dev *models.RoleScorecard
	for i := range b.Roles {
		if b.Roles[i].Role == "dev" {
			dev = &b.Roles[i]
		}
	}
	if dev == nil || dev.Taken != 5 || dev.FirstPass != 1 || dev.Revised != 3 || dev.BlockedWork != 1 {
		t.Fatalf("role dev: %+v", dev)
	}
}

func TestGoalProgressOfSeededHistory(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		lead := agent(t, db, "lead", "lead")
		g := &models.Goal{Title: "g", CreatorID: lead.ID, CreatedAt: day(4, 9, 0)}
		must(t, db.CreateGoal(ctx, g))
		mk := func(created time.Time, state models.TaskState, verified *time.Time) *models.Task {
			tk := &models.Task{Title: "t", Role: "dev", CreatorID: lead.ID, GoalID: &g.ID, CreatedAt: created}
			must(t, db.CreateTask(ctx, tk))
			tk.State, tk.VerifiedAt = state, verified
			must(t, db.UpdateTask(ctx, tk))
			return tk
		}
		fail := func(tk *models.Task, n int, stage string) {
			must(t, db.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: n, AgentID: lead.ID, Outcome: models.OutcomeFailed,
				Stage: stage, StartedAt: day(5, 1, n)}))
		}
		t1 := mk(day(4, 10, 0), models.TaskVerified, ptr(day(5, 10, 0)))
		t2 := mk(day(4, 10, 0), models.TaskCancelled, nil)
		t3 := mk(day(4, 10, 0), models.TaskPending, nil)
		mk(day(7, 10, 0), models.TaskPending, nil)
		must(t, db.AppendEvent(ctx, &models.Event{Type: "task.cancelled", TaskID: &t2.ID, GoalID: &g.ID, CreatedAt: day(6, 8, 0)}))
		fail(t1, 1, models.StageVerify)
		fail(t1, 2, models.StageVerify)
		fail(t3, 1, models.StageEvaluation)
		must(t, db.CreateAttempt(ctx, &models.Attempt{TaskID: t3.ID, Number: 2, AgentID: lead.ID, Outcome: models.OutcomeInfra,
			Stage: models.StageInfra, StartedAt: day(5, 2, 0)}))

		svc := models.NewService(db, nil)
		svc.SetClock(func() time.Time { return statsNow })
		p, err := svc.Stats.GoalProgress(ctx, lead, g.ID)
		must(t, err)
		want := []int{3, 2, 1, 2, 2, 2} // 4 to 9 March
		if len(p.BurnDown) != len(want) {
			t.Fatalf("burn-down %+v, want %d days", p.BurnDown, len(want))
		}
		for i, d := range p.BurnDown {
			if d.Left != want[i] || d.Day.Day() != 4+i {
				t.Fatalf("burn-down day %d = %s %d left, want %d", i, d.Day.Format(time.DateOnly), d.Left, want[i])
			}
		}
		if p.TopStage != models.StageVerify {
			t.Fatalf("top stage %q, want verify; stages %+v", p.TopStage, p.Stages)
		}
		counts := map[string]int{}
		for _, s := range p.Stages {
			counts[s.Stage] = s.Count
		}
		if counts[models.StageVerify] != 2 || counts[models.StageEvaluation] != 1 || counts[models.StageInfra] != 0 || len(p.Stages) != len(models.WorkStages) {
			t.Fatalf("stages %+v", p.Stages)
		}
	})
}

// TestGoalProgressReadsIndexesOnly: the goal page's burn-down counts a goal's tasks
// created per day and verified per day from an index alone (0024), not by reading
// every task row of a goal that may hold 60,000 (each load took ~1 s on SQLite).
func TestGoalProgressReadsIndexesOnly(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		g := &models.Goal{Title: "big", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		must(t, db.Gorm().WithContext(ctx).Exec(`WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 5000)
			INSERT INTO tasks (title, brief, role, state, goal_id, creator_id, created_at, updated_at, verified_at)
			SELECT 'bulk', 'a brief to skip', 'developer', CASE WHEN n % 9 = 0 THEN 'verified' ELSE 'pending' END, ?, ?,
				CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CASE WHEN n % 9 = 0 THEN CURRENT_TIMESTAMP END FROM s`, g.ID, boss.ID).Error)
		must(t, db.Gorm().WithContext(ctx).Exec("ANALYZE").Error)
		created, verified, err := db.GoalProgressPlans(ctx, g.ID)
		must(t, err)
		if db.Dialect() != store.DialectSQLite {
			// PostgreSQL picks a sequential scan for a table that is all one goal, and an
			// index-only scan once the visibility map allows it: its plan is a cost call.
			t.Logf("created:\n%s\nverified:\n%s", created, verified)
			return
		}
		for _, p := range []struct{ plan, index string }{{created, "tasks_goal_created_idx"}, {verified, "tasks_goal_verified_idx"}} {
			want := "COVERING INDEX " + p.index
			if !strings.Contains(p.plan, want) {
				t.Errorf("plan does not read %s:\n%s", want, p.plan)
			}
		}
	})
}
