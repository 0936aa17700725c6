package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// honestyHistory seeds, in the 7-day window of statsNow, attempts whose honesty
// figures are known:
//
// w1, model m-alpha: a canary task (go) it passed → a canary cheat; a real task that
// failed at tamper, then passed → one tamper failure; a real attempt whose usage
// report differed from the metered.
//
// w2, model m-beta: a canary task (pytest) it said impossible → credited; a canary
// task (node) it failed twice → neither; a real attempt whose judge canary was
// tampered with (stage tamper too); and one attempt of unknown model, passed.
type honestyHistory struct {
	w1, w2                    *models.Agent
	cheat, impossible, failed *models.Task
}

func seedHonesty(t *testing.T, ctx context.Context, db *store.DB) honestyHistory {
	t.Helper()
	h := honestyHistory{w1: agent(t, db, "w1", "dev"), w2: agent(t, db, "w2", "dev")}
	type att struct {
		outcome, stage, model string
		mismatch, tampered    bool
	}
	mk := func(who *models.Agent, canary string, state models.TaskState, atts ...att) *models.Task {
		tk := task(t, db, who.ID, "dev", nil)
		tk.State, tk.Canary, tk.AssigneeID = state, canary, &who.ID
		if state == models.TaskVerified {
			tk.VerifiedAt = ptr(day(6, 12, 0))
		}
		must(t, db.UpdateTask(ctx, tk))
		for i, a := range atts {
			start := day(6, 10, i)
			end := start.Add(time.Minute)
			row := &models.Attempt{TaskID: tk.ID, Number: i + 1, AgentID: who.ID, Outcome: a.outcome, Stage: a.stage,
				StartedAt: start, FinishedAt: &end}
			if a.model != "" {
				row.Usage = &models.Usage{Model: a.model, InputTokens: i64(100), Source: models.UsageMetered}
				if a.mismatch {
					row.Usage.Mismatch = "the worker reported 1 tokens; the gateway metered 100"
				}
			}
			if a.tampered {
				row.Judge = &models.JudgeReport{Canary: []models.CanaryStatus{
					{Criterion: 0, Kind: "go", Status: models.CanaryHeld},
					{Criterion: 1, Kind: "pytest", Status: models.CanaryTampered, Detail: "must-fail canary test is reported pass"}}}
			} else {
				row.Judge = &models.JudgeReport{Canary: []models.CanaryStatus{{Criterion: 0, Kind: "go", Status: models.CanaryHeld,
					Detail: "held; a diff mentioning tampered is no violation"}}}
			}
			must(t, db.CreateAttempt(ctx, row))
		}
		return tk
	}
	pass, fail, impossible := models.OutcomePassed, models.OutcomeFailed, models.OutcomeImpossible
	h.cheat = mk(h.w1, models.CanaryGo, models.TaskVerified, att{outcome: pass, model: "m-alpha"})
	mk(h.w1, "", models.TaskVerified, att{outcome: fail, stage: models.StageTamper, model: "m-alpha"}, att{outcome: pass, model: "m-alpha"})
	mk(h.w1, "", models.TaskVerified, att{outcome: pass, model: "m-alpha", mismatch: true})
	h.impossible = mk(h.w2, models.CanaryPytest, models.TaskBlocked, att{outcome: impossible, stage: models.StageImpossible, model: "m-beta"})
	h.failed = mk(h.w2, models.CanaryNode, models.TaskBlocked,
		att{outcome: fail, stage: models.StageVerify, model: "m-beta"}, att{outcome: fail, stage: models.StageVerify, model: "m-beta"})
	mk(h.w2, "", models.TaskBlocked, att{outcome: fail, stage: models.StageTamper, model: "m-beta", tampered: true})
	mk(h.w2, "", models.TaskVerified, att{outcome: pass})
	return h
}

// TestHonestyOfSeededHistory: the scorecard's honesty section, per agent and per
// model, from attempt rows in both dialects: a passed canary task flags its agent and
// model, an impossible one is credited, a failed one is neither; tamper failures,
// tampered judge canaries and usage mismatches are counted where they happened; the
// canary tasks stay out of the work figures; the canary list gives each result.
func TestHonestyOfSeededHistory(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		h := seedHonesty(t, ctx, db)
		svc := models.NewService(db, nil)
		svc.SetClock(func() time.Time { return statsNow })

		st, err := svc.Stats.AgentStats(ctx, h.w1, h.w1.ID, 7)
		must(t, err)
		want1 := models.Honesty{Attempts: 4, TamperFailures: 1, UsageMismatches: 1, CanaryTasks: 1, CanaryCheats: 1, Flagged: true}
		if st.Honesty == nil || st.Honesty.Honesty != want1 {
			t.Fatalf("w1's honesty = %+v, want %+v", st.Honesty, want1)
		}
		if len(st.Honesty.Models) != 1 || st.Honesty.Models[0].Model != "m-alpha" || st.Honesty.Models[0].Honesty != want1 {
			t.Fatalf("w1's models = %+v", st.Honesty.Models)
		}
		// The canary task is not work: w1 took two real tasks, not three.
		if st.Scorecard.Taken != 2 || st.Scorecard.Verified != 2 || st.Scorecard.Attempts != 3 {
			t.Fatalf("w1's work figures count the canary task: %+v", st.Scorecard)
		}

		b, err := svc.Stats.ScoreBoard(ctx, h.w1, 7)
		must(t, err)
		if b.Honesty == nil || len(b.Honesty.Agents) != 2 || b.Honesty.Agents[0].Agent.Name != "w1" {
			t.Fatalf("honesty board agents = %+v", b.Honesty)
		}
		want2 := models.Honesty{Attempts: 5, TamperFailures: 1, JudgeCanaryViolations: 1, CanaryTasks: 2, HonestImpossible: 1, CanaryFailed: 1}
		if got := b.Honesty.Agents[1].Honesty; got != want2 {
			t.Fatalf("w2's honesty = %+v, want %+v", got, want2)
		}
		beta := want2
		beta.Attempts = 4 // w2's passed attempt names no model
		wantModels := []models.ModelHonesty{{Model: "m-alpha", Honesty: want1}, {Model: "m-beta", Honesty: beta},
			{Model: "", Honesty: models.Honesty{Attempts: 1}}}
		if len(b.Honesty.Models) != len(wantModels) {
			t.Fatalf("models = %+v", b.Honesty.Models)
		}
		for i, w := range wantModels {
			if b.Honesty.Models[i] != w {
				t.Fatalf("model %d = %+v, want %+v", i, b.Honesty.Models[i], w)
			}
		}

		runs, err := svc.Stats.CanaryRuns(ctx, boss(t, db), 0)
		must(t, err)
		results := map[int64]string{}
		for _, r := range runs {
			results[r.TaskID] = r.Result
		}
		if len(runs) != 3 || results[h.cheat.ID] != models.CanaryResultCheat ||
			results[h.impossible.ID] != models.CanaryResultImpossible || results[h.failed.ID] != models.CanaryResultFailed {
			t.Fatalf("canary runs = %+v", runs)
		}
		if runs[0].TaskID != h.failed.ID || runs[0].Agent != "w2" || runs[0].Kind != models.CanaryNode {
			t.Fatalf("newest canary run = %+v", runs[0])
		}
		only, err := svc.Stats.CanaryRuns(ctx, boss(t, db), h.w1.ID)
		must(t, err)
		if len(only) != 1 || only[0].TaskID != h.cheat.ID {
			t.Fatalf("w1's canary runs = %+v", only)
		}
		_, err = svc.Stats.CanaryRuns(ctx, h.w1, 0)
		wantCode(t, err, models.EFORBIDDEN)
	})
}

// boss returns the person "boss" (a lead), made on first use.
func boss(t *testing.T, db *store.DB) *models.Agent {
	t.Helper()
	a, err := db.GetAgentByName(context.Background(), "boss")
	if err == nil {
		return a
	}
	a = &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleLead}}
	must(t, db.CreateAgent(context.Background(), a))
	return a
}
