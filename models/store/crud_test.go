package store_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
)

func TestAgentsRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		runner, err := db.GetAgentByName(ctx, models.RunnerAgentName)
		must(t, err)
		if runner.Kind != models.KindSystem || len(runner.Roles) != 0 || runner.Roles == nil {
			t.Fatalf("built-in runner agent = %+v, want kind system and no roles", runner)
		}

		a := &models.Agent{
			Name: "dev-1", Kind: models.KindWorker, Roles: []string{"developer", "tester"},
			Command: "claude -p", Workdir: "/srv/repo", Worktree: true, TargetBranch: "main", Forge: "origin", Concurrency: 3,
			Disabled: true, CreatedAt: ts(1), UpdatedAt: ts(2), PasswordHash: "$2a$10$hash",
			Sandbox: models.AgentSandbox{Read: []string{"/opt/sdk"}, Write: []string{"/var/cache/go", "/tmp/x"}, Connect: []int{443, 5432}, AllowUnix: true},
			PassEnv: []string{"ANTHROPIC_API_KEY"}, DailyBudget: &contract.Budget{MaxCostUSD: ptr(25.0)},
		}
		a.ID = 99 // ignored: the store assigns ids
		allSet(t, a, "Scope")
		want := *a
		must(t, db.CreateAgent(ctx, a))
		if a.ID == 0 || a.ID == 99 {
			t.Fatalf("CreateAgent set ID %d", a.ID)
		}
		want.ID = a.ID
		equal(t, "agent after CreateAgent", a, &want)
		got, err := db.GetAgent(ctx, a.ID)
		must(t, err)
		equal(t, "GetAgent", got, &want)
		got, err = db.GetAgentByName(ctx, "dev-1")
		must(t, err)
		equal(t, "GetAgentByName", got, &want)

		a.Roles, a.Command, a.Disabled, a.Concurrency = []string{"reviewer"}, "other", false, 5
		a.Sandbox = models.AgentSandbox{Write: []string{"/srv/out"}}
		want = *a
		must(t, db.UpdateAgent(ctx, a))
		recent(t, a.UpdatedAt)
		want.UpdatedAt = a.UpdatedAt
		got, err = db.GetAgent(ctx, a.ID)
		must(t, err)
		equal(t, "after UpdateAgent", got, &want)

		list, err := db.ListAgents(ctx)
		must(t, err)
		if len(list) != 2 || list[0].Name != "dev-1" || list[1].Name != "runner" {
			t.Fatalf("ListAgents = %+v, want dev-1 and runner by name", list)
		}

		dup := &models.Agent{Name: "dev-1", Kind: models.KindHuman, Roles: []string{"lead"}, Concurrency: 1}
		err = db.CreateAgent(ctx, dup)
		wantCode(t, err, models.ECONFLICT)
		if !strings.Contains(err.Error(), `"dev-1"`) {
			t.Fatalf("conflict message %q does not name the agent", err)
		}
		other := agent(t, db, "dev-2", "developer")
		other.Name = "dev-1"
		wantCode(t, db.UpdateAgent(ctx, other), models.ECONFLICT)

		_, err = db.GetAgent(ctx, 12345)
		wantCode(t, err, models.ENOTFOUND)
		_, err = db.GetAgentByName(ctx, "nobody")
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.UpdateAgent(ctx, &models.Agent{ID: 12345, Name: "x", Kind: models.KindHuman}), models.ENOTFOUND)
	})
}

func TestTokensAndSessions(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		a := agent(t, db, "bot", "developer")
		task := &models.Task{Title: "t", Role: "developer", State: models.TaskPending}
		must(t, db.CreateTask(ctx, task))
		tok := &models.Token{AgentID: a.ID, Name: "ci", Hash: strings.Repeat("ab", 32), CreatedAt: ts(1),
			LastUsedAt: tsp(2), ExpiresAt: tsp(50), RevokedAt: tsp(3), TaskID: &task.ID, Attempt: 2}
		allSet(t, tok, "ID")
		want := *tok
		must(t, db.CreateToken(ctx, tok))
		if tok.ID == 0 {
			t.Fatal("CreateToken did not set ID")
		}
		want.ID = tok.ID
		equal(t, "token after CreateToken", tok, &want)
		got, owner, err := db.TokenByHash(ctx, tok.Hash)
		must(t, err)
		equal(t, "TokenByHash token", got, &want)
		equal(t, "TokenByHash agent", owner, a)
		gt, err := db.GetToken(ctx, tok.ID)
		must(t, err)
		equal(t, "GetToken", gt, &want)

		_, _, err = db.TokenByHash(ctx, "unknown")
		wantCode(t, err, models.ENOTFOUND)
		_, err = db.GetToken(ctx, 12345)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.CreateToken(ctx, &models.Token{AgentID: a.ID, Hash: tok.Hash}), models.ECONFLICT)
		wantCode(t, db.CreateToken(ctx, &models.Token{AgentID: 9999, Hash: "x"}), models.EINVALID)
		a.Disabled = true
		must(t, db.UpdateAgent(ctx, a))
		_, owner, err = db.TokenByHash(ctx, tok.Hash)
		must(t, err)
		if !owner.Disabled {
			t.Fatal("TokenByHash hid that the agent is disabled")
		}
		s := &models.Session{ID: "sess-hash", AgentID: a.ID, CSRF: "csrf-token", CreatedAt: ts(1), ExpiresAt: time.Now().Add(time.Hour)}
		allSet(t, s)
		wantS := *s
		wantS.ExpiresAt = wantS.ExpiresAt.Truncate(time.Microsecond)
		must(t, db.CreateSession(ctx, s))
		gs, err := db.GetSession(ctx, s.ID)
		must(t, err)
		equal(t, "GetSession", gs, &wantS)
		wantCode(t, db.CreateSession(ctx, &models.Session{ID: s.ID, AgentID: a.ID, ExpiresAt: time.Now().Add(time.Hour)}), models.ECONFLICT)
		must(t, db.DeleteSession(ctx, s.ID))
		must(t, db.DeleteSession(ctx, s.ID))
		_, err = db.GetSession(ctx, s.ID)
		wantCode(t, err, models.ENOTFOUND)

		expired := &models.Session{ID: "old", AgentID: a.ID, CSRF: "c", ExpiresAt: time.Now().Add(-time.Minute)}
		must(t, db.CreateSession(ctx, expired))
		_, err = db.GetSession(ctx, "old")
		wantCode(t, err, models.ENOTFOUND)
	})
}

func TestGoalsRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		lead := agent(t, db, "lead", "lead")
		g := &models.Goal{
			Title: "Dark mode", Description: "All pages", Project: "web", State: models.GoalVerified,
			CreatorID: lead.ID, VerifierID: &lead.ID, Notes: "checked", VerifiedAt: tsp(3),
			CreatedAt: ts(1), UpdatedAt: ts(2), Budget: &contract.Budget{MaxCostUSD: ptr(3.5), MaxTokens: ptr(int64(900000))},
			Deferred: &models.DeferredChecks{Status: models.DeferredPassed, Runner: "r1", StartedAt: tsp(4), FinishedAt: tsp(5),
				Criteria: []models.DeferredCriterion{{TaskID: 7, Criterion: contract.Criterion{Activity: "e2e", Command: "npm run e2e", Timing: contract.TimingDeferred}}},
				Results:  []models.CriterionResult{{Activity: "e2e", Command: "npm run e2e", Status: models.VerdictPass, Attempts: 1}}},
		}
		allSet(t, g, "ID")
		want := *g
		must(t, db.CreateGoal(ctx, g))
		want.ID = g.ID
		got, err := db.GetGoal(ctx, g.ID)
		must(t, err)
		equal(t, "GetGoal", got, &want)

		g.State, g.VerifierID, g.VerifiedAt, g.Notes = models.GoalActive, nil, nil, ""
		want = *g
		must(t, db.UpdateGoal(ctx, g))
		recent(t, g.UpdatedAt)
		want.UpdatedAt = g.UpdatedAt
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			got, err := tx.LockGoal(ctx, g.ID)
			if err != nil {
				return err
			}
			equal(t, "LockGoal", got, &want)
			_, err = tx.LockGoal(ctx, 4242)
			wantCode(t, err, models.ENOTFOUND)
			return nil
		}))

		g2 := &models.Goal{Title: "Other", Project: "api", CreatorID: lead.ID}
		must(t, db.CreateGoal(ctx, g2))
		if g2.State != models.GoalOpen {
			t.Fatalf("new goal state = %q, want open", g2.State)
		}
		all, err := db.ListGoals(ctx, models.GoalFilter{})
		must(t, err)
		if len(all) != 2 || all[0].ID != g2.ID {
			t.Fatalf("ListGoals = %d goals, first %d; want 2, newest first", len(all), all[0].ID)
		}
		for _, f := range []models.GoalFilter{{State: models.GoalActive}, {Project: "web"}, {Limit: 1, State: models.GoalActive}} {
			list, err := db.ListGoals(ctx, f)
			must(t, err)
			if len(list) != 1 || list[0].ID != g.ID {
				t.Fatalf("ListGoals(%+v) = %+v", f, list)
			}
		}
		_, err = db.GetGoal(ctx, 4242)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.UpdateGoal(ctx, &models.Goal{ID: 4242, Title: "x", CreatorID: lead.ID}), models.ENOTFOUND)
		wantCode(t, db.CreateGoal(ctx, &models.Goal{Title: "x", CreatorID: 4242}), models.EINVALID)
	})
}

func TestInboxRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "exec")
		g := &models.Goal{Title: "G", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		tk := task(t, db, boss.ID, "developer", &g.ID)
		it := &models.InboxItem{
			Kind: models.InboxBlocked, TaskID: tk.ID, GoalID: &g.ID, Title: "blocked",
			Payload: json.RawMessage(`{"type":"task.blocked","task_id":1}`), Resolved: true,
			ResolvedBy: &boss.ID, Resolution: "accepted", CreatedAt: ts(1), ResolvedAt: tsp(2), EscalatedAt: tsp(3),
		}
		allSet(t, it, "ID")
		want := *it
		want.Payload = slices.Clone(it.Payload)
		must(t, db.CreateInboxItem(ctx, it))
		want.ID = it.ID
		got, err := db.GetInboxItem(ctx, it.ID)
		must(t, err)
		equal(t, "GetInboxItem", got, &want)

		open := &models.InboxItem{Kind: models.InboxAdvisory, TaskID: tk.ID, Title: "look"}
		must(t, db.CreateInboxItem(ctx, open))
		esc := &models.InboxItem{Kind: models.InboxEscalation, TaskID: tk.ID, Title: "esc"}
		must(t, db.CreateInboxItem(ctx, esc))

		ids := func(f models.InboxFilter) []int64 {
			items, err := db.ListInbox(ctx, f)
			must(t, err)
			out := []int64{}
			for _, i := range items {
				out = append(out, i.ID)
			}
			return out
		}
		if got := ids(models.InboxFilter{}); !slices.Equal(got, []int64{esc.ID, open.ID}) {
			t.Fatalf("open inbox = %v", got)
		}
		if got := ids(models.InboxFilter{IncludeResolved: true}); !slices.Equal(got, []int64{esc.ID, open.ID, it.ID}) {
			t.Fatalf("whole inbox = %v", got)
		}
		if got := ids(models.InboxFilter{Kind: models.InboxAdvisory, TaskID: tk.ID}); !slices.Equal(got, []int64{open.ID}) {
			t.Fatalf("advisory inbox = %v", got)
		}
		open.Resolved, open.ResolvedBy, open.ResolvedAt, open.Resolution = true, &boss.ID, tsp(9), "seen"
		want = *open
		must(t, db.UpdateInboxItem(ctx, open))
		got, err = db.GetInboxItem(ctx, open.ID)
		must(t, err)
		equal(t, "after UpdateInboxItem", got, &want)
		if got := ids(models.InboxFilter{Limit: 5}); !slices.Equal(got, []int64{esc.ID}) {
			t.Fatalf("open inbox after resolving = %v", got)
		}
		_, err = db.GetInboxItem(ctx, 4242)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.UpdateInboxItem(ctx, &models.InboxItem{ID: 4242, TaskID: tk.ID}), models.ENOTFOUND)
		// Escalating an open item happens once; a resolved one never.
		for i, want := range []bool{true, false} {
			if ok, err := db.EscalateInboxItem(ctx, esc.ID, ts(5)); err != nil || ok != want {
				t.Fatalf("escalating the open item, time %d: %v %v", i+1, ok, err)
			}
		}
		done := &models.InboxItem{Kind: models.InboxAdvisory, TaskID: tk.ID, Title: "looked at", Resolved: true, ResolvedAt: tsp(4)}
		must(t, db.CreateInboxItem(ctx, done))
		if ok, err := db.EscalateInboxItem(ctx, done.ID, ts(5)); err != nil || ok {
			t.Fatalf("escalating a resolved item: %v %v", ok, err)
		}
	})
}

func TestEventsOrder(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		e := &models.Event{Type: "task.assigned", TaskID: i64(1), GoalID: i64(2), ActorID: i64(3), AgentID: i64(4), Data: json.RawMessage(`{"a":1}`), CreatedAt: ts(1)}
		allSet(t, e, "ID")
		want := *e
		want.Data = slices.Clone(e.Data)
		must(t, db.AppendEvent(ctx, e))
		want.ID = e.ID
		var last int64 = e.ID
		for i := 0; i < 5; i++ {
			var evs []*models.Event
			must(t, db.InTx(ctx, func(tx models.Tx) error {
				for j := 0; j < 2; j++ {
					ev := &models.Event{Type: "x"}
					if err := tx.AppendEvent(ctx, ev); err != nil {
						return err
					}
					if ev.ID != 0 {
						t.Errorf("event id %d before the commit", ev.ID)
					}
					evs = append(evs, ev)
				}
				return nil
			}))
			// Ids are assigned at the commit, in the order of the appends.
			for _, ev := range evs {
				if ev.ID <= last {
					t.Errorf("event id %d after %d", ev.ID, last)
				}
				last = ev.ID
			}
		}
		all, err := db.ListEvents(ctx, 0, 0)
		must(t, err)
		if len(all) != 11 {
			t.Fatalf("ListEvents = %d, want 11", len(all))
		}
		equal(t, "first event", &all[0], &want)
		if all[1].Data != nil || all[1].CreatedAt.IsZero() {
			t.Fatalf("event without data: %+v", all[1])
		}
		for i := 1; i < len(all); i++ {
			if all[i].ID <= all[i-1].ID {
				t.Fatalf("ListEvents not oldest first: %d then %d", all[i-1].ID, all[i].ID)
			}
		}
		page, err := db.ListEvents(ctx, all[3].ID, 2)
		must(t, err)
		if len(page) != 2 || page[0].ID != all[4].ID || page[1].ID != all[5].ID {
			t.Fatalf("ListEvents(after %d, 2) = %v", all[3].ID, page)
		}
	})
}

func TestLedgerRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		// The entry the round-tripped one revokes (posted, so the pending list below
		// holds only the three appended there).
		base := &models.LedgerEntry{Type: models.LedgerTaskComplete, TaskID: i64(1), Message: []byte("m")}
		must(t, db.AppendLedgerEntry(ctx, base))
		base.Status = models.LedgerPosted
		must(t, db.UpdateLedgerEntry(ctx, base))
		e := &models.LedgerEntry{
			Type: models.LedgerTaskRevoked, TaskID: i64(1), GoalID: i64(2),
			Message: []byte{0, 1, 2, 0xff, '{'}, Payload: []byte(`{"full":true}`), Attestation: []byte(`{"payloadType":"application/vnd.in-toto+json"}`), Status: models.LedgerPosted,
			Attempts: 2, LastError: "timeout", Override: true, Kind: models.KindOverride, RevokesID: &base.ID, CreatedAt: ts(1),
			TxID: "0.0.1234@1700000000.000000001", TxBytes: []byte{9, 8, 7, 0},
			Sequence: 42, RunningHash: "ab01", ConsensusAt: tsp(2), PostedAt: tsp(3),
		}
		allSet(t, e, "ID")
		want := *e
		want.Message, want.Payload, want.TxBytes = slices.Clone(e.Message), slices.Clone(e.Payload), slices.Clone(e.TxBytes)
		want.Status = models.LedgerPending // appended entries start pending
		must(t, db.AppendLedgerEntry(ctx, e))
		want.ID = e.ID
		got, err := db.GetLedgerEntry(ctx, e.ID)
		must(t, err)
		equal(t, "GetLedgerEntry", got, &want)

		e.Status, e.Attempts = models.LedgerPosted, 3
		want.Status, want.Attempts = models.LedgerPosted, 3
		must(t, db.UpdateLedgerEntry(ctx, e))
		got, err = db.GetLedgerEntry(ctx, e.ID)
		must(t, err)
		equal(t, "after UpdateLedgerEntry", got, &want)

		var les []*models.LedgerEntry
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			for i := 0; i < 3; i++ {
				le := &models.LedgerEntry{Type: models.LedgerGoalVerified, Message: []byte("m")}
				if err := tx.AppendLedgerEntry(ctx, le); err != nil {
					return err
				}
				les = append(les, le)
			}
			return nil
		}))
		ids := []int64{les[0].ID, les[1].ID, les[2].ID}
		pending, err := db.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending})
		must(t, err)
		if len(pending) != 3 || pending[0].ID != ids[0] || pending[2].ID != ids[2] || pending[0].Payload != nil || pending[0].TxBytes != nil {
			t.Fatalf("pending ledger = %+v", pending)
		}
		page, err := db.ListLedger(ctx, models.LedgerFilter{AfterID: e.ID, Limit: 2})
		must(t, err)
		if len(page) != 2 || page[0].ID != ids[0] || page[1].ID != ids[1] {
			t.Fatalf("ListLedger page = %+v", page)
		}
		chain, err := db.ListLedger(ctx, models.LedgerFilter{TaskID: 1})
		must(t, err)
		if len(chain) != 2 || chain[0].ID != base.ID || chain[1].ID != e.ID || *chain[1].RevokesID != base.ID {
			t.Fatalf("ListLedger of task 1 = %+v", chain)
		}
		if goal, err := db.ListLedger(ctx, models.LedgerFilter{GoalID: 2}); err != nil || len(goal) != 1 || goal[0].ID != e.ID {
			t.Fatalf("ListLedger of goal 2 = %+v, %v", goal, err)
		}
		typed, err := db.ListLedger(ctx, models.LedgerFilter{Types: []string{models.LedgerGoalVerified, models.LedgerTaskRevoked}})
		must(t, err)
		if len(typed) != 4 || typed[0].ID != e.ID {
			t.Fatalf("ListLedger of two types = %d entries", len(typed))
		}
		_, err = db.GetLedgerEntry(ctx, 4242)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.UpdateLedgerEntry(ctx, &models.LedgerEntry{ID: 4242}), models.ENOTFOUND)
	})
}

func TestRules(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		_, err := db.GetRules(ctx)
		wantCode(t, err, models.ENOTFOUND)
		r := &models.ProjectRules{
			Rules: contract.Rules{
				Activities:    map[string]string{"unit-test": "go test ./...", "lint": "go vet ./..."},
				FilePatterns:  []contract.FilePatternRule{{Pattern: "*.go", Activities: []string{"unit-test"}, Timing: "immediate"}},
				Always:        []string{"lint"},
				AdvisoryWords: []string{"research"},
				SkipWords:     []string{"docs"},
				Stacks:        contract.DefaultStacks(),
			},
			Prices:            []models.ModelPrice{{Pattern: "claude-x.*", InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}},
			PromptForAdvisory: true,
			Hats:              []models.Hat{{Name: "tester", ConflictsWith: []string{"builder", "reviewer"}}, {Name: "auditor"}},
		}
		must(t, db.SaveRules(ctx, r))
		allSet(t, r)
		recent(t, r.UpdatedAt)
		want := &models.ProjectRules{
			Rules: contract.Rules{
				Activities:    map[string]string{"unit-test": "go test ./...", "lint": "go vet ./..."},
				FilePatterns:  []contract.FilePatternRule{{Pattern: "*.go", Activities: []string{"unit-test"}, Timing: "immediate"}},
				Always:        []string{"lint"},
				AdvisoryWords: []string{"research"},
				SkipWords:     []string{"docs"},
				Stacks:        contract.DefaultStacks(),
			},
			Prices:            r.Prices,
			PromptForAdvisory: true,
			Hats:              r.Hats,
			UpdatedAt:         r.UpdatedAt,
		}
		got, err := db.GetRules(ctx)
		must(t, err)
		equal(t, "GetRules", got, want)
		r.Always = []string{"unit-test"}
		must(t, db.SaveRules(ctx, r))
		want.Always, want.UpdatedAt = []string{"unit-test"}, r.UpdatedAt
		got, err = db.GetRules(ctx)
		must(t, err)
		equal(t, "GetRules after second save", got, want)
	})
}

// TestAppendEventsBatch: one call stores the events in order with increasing ids,
// sets each event as stored, and tells subscribers the largest id once committed;
// the buffered form holds events back until Flush.
func TestAppendEventsBatch(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		ch := db.Subscribe(ctx)
		var es []*models.Event
		for _, typ := range []string{"a", "b", "c"} {
			es = append(es, &models.Event{Type: typ, TaskID: i64(7), Data: json.RawMessage(`{"k":"` + typ + `"}`)})
		}
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			buf := models.BufferEvents(tx)
			must(t, buf.AppendEvent(ctx, es[0]))
			must(t, buf.AppendEvents(ctx, es[1:]))
			if es[0].ID != 0 {
				t.Fatalf("a held event has id %d before Flush", es[0].ID)
			}
			seen, err := tx.ListEvents(ctx, 0, 0)
			must(t, err)
			if len(seen) != 0 {
				t.Fatalf("held events were stored before Flush: %v", seen)
			}
			must(t, buf.Flush(ctx))
			must(t, buf.Flush(ctx)) // nothing left: no second copy
			return nil
		}))
		if es[0].ID == 0 || es[1].ID != es[0].ID+1 || es[2].ID != es[1].ID+1 {
			t.Fatalf("ids %d, %d, %d: want consecutive, in append order", es[0].ID, es[1].ID, es[2].ID)
		}
		all, err := db.ListEvents(ctx, 0, 0)
		must(t, err)
		if len(all) != 3 {
			t.Fatalf("%d events stored, want 3", len(all))
		}
		for i, e := range all {
			equal(t, "stored event", &all[i], es[i])
			if e.Type != []string{"a", "b", "c"}[i] {
				t.Fatalf("event %d is %q", i, e.Type)
			}
		}
		if id, _ := next(t, ch); id != es[2].ID {
			t.Fatalf("subscribers heard %d, want the batch's largest id %d", id, es[2].ID)
		}
		must(t, db.AppendEvents(ctx, nil)) // nothing to store is not an error
	})
}

func ptr[T any](v T) *T { return &v }
