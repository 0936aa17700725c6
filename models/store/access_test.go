package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestTokenUseRevokeAndPrune: a token's use is written only when the last one is
// older than since; ListTokens leaves attempt tokens out; RevokeTokens revokes what
// its filter selects, once; DeleteAttemptTokens deletes expired attempt tokens only.
func TestTokenUseRevokeAndPrune(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		a := agent(t, db, "bot", "developer")
		b := agent(t, db, "other", "developer")
		tk := task(t, db, a.ID, "developer", nil)
		mk := func(owner *models.Agent, name, hash string, taskID *int64, expires *time.Time) *models.Token {
			tok := &models.Token{AgentID: owner.ID, Name: name, Hash: hash, TaskID: taskID, ExpiresAt: expires}
			must(t, db.CreateToken(ctx, tok))
			return tok
		}
		ci := mk(a, "ci", "h1", nil, nil)
		ci2 := mk(a, "ci", "h2", nil, nil)
		laptop := mk(a, "laptop", "h3", nil, nil)
		att := mk(a, "attempt 1", "h4", &tk.ID, tsp(1))
		live := mk(a, "attempt 2", "h5", &tk.ID, ptrTime(time.Now().Add(time.Hour)))
		mk(b, "ci", "h6", nil, nil)

		checkTouchToken(t, ctx, db, ci.ID)

		list, err := db.ListTokens(ctx, a.ID)
		must(t, err)
		var ids []int64
		for _, x := range list {
			ids = append(ids, x.ID)
		}
		if !slices.Equal(ids, []int64{laptop.ID, ci2.ID, ci.ID}) {
			t.Fatalf("ListTokens = %v, want the agent's own tokens newest first, no attempt tokens", ids)
		}

		_, err = db.RevokeTokens(ctx, models.TokenFilter{Name: "ci"}, ts(30))
		wantCode(t, err, models.EINVALID)
		revoked, err := db.RevokeTokens(ctx, models.TokenFilter{AgentID: a.ID, Name: "ci"}, ts(30))
		must(t, err)
		if len(revoked) != 2 || revoked[0].ID != ci.ID || revoked[1].ID != ci2.ID || !revoked[0].RevokedAt.Equal(ts(30)) {
			t.Fatalf("revoked %+v, want ci and ci2 of bot at %v", revoked, ts(30))
		}
		again, err := db.RevokeTokens(ctx, models.TokenFilter{ID: ci.ID}, ts(40))
		must(t, err)
		if len(again) != 0 {
			t.Fatalf("revoking a revoked token revoked %+v", again)
		}
		got, _ := db.GetToken(ctx, ci.ID)
		if !got.RevokedAt.Equal(ts(30)) {
			t.Fatalf("revoked at %v after a second revocation, want %v kept", got.RevokedAt, ts(30))
		}
		byTask, err := db.RevokeTokens(ctx, models.TokenFilter{TaskID: tk.ID}, ts(31))
		must(t, err)
		if len(byTask) != 2 {
			t.Fatalf("revoked %d attempt tokens of the task, want 2", len(byTask))
		}
		_, otherCI, err := db.TokenByHash(ctx, "h6")
		must(t, err)
		if otherCI.ID != b.ID {
			t.Fatal("h6 changed owner")
		}
		if tok, _, _ := db.TokenByHash(ctx, "h6"); tok.RevokedAt != nil {
			t.Fatal("another agent's token of the same name was revoked")
		}

		n, err := db.DeleteAttemptTokens(ctx, time.Now())
		must(t, err)
		if n != 1 {
			t.Fatalf("deleted %d attempt tokens, want the expired one", n)
		}
		_, err = db.GetToken(ctx, att.ID)
		wantCode(t, err, models.ENOTFOUND)
		for _, keep := range []int64{live.ID, laptop.ID} {
			if _, err := db.GetToken(ctx, keep); err != nil {
				t.Fatalf("token %d: %v", keep, err)
			}
		}
	})
}

// checkTouchToken: a touch within the interval of the last use is not written;
// split out of TestTokenUseRevokeAndPrune to keep it short.
func checkTouchToken(t *testing.T, ctx context.Context, db *store.DB, id int64) {
	t.Helper()
	must(t, db.TouchToken(ctx, id, ts(10), ts(9)))
	must(t, db.TouchToken(ctx, id, ts(11), ts(9))) // used at 10, after 9: not written again
	got, err := db.GetToken(ctx, id)
	must(t, err)
	if got.LastUsedAt == nil || !got.LastUsedAt.Equal(ts(10)) {
		t.Fatalf("last used %v, want %v (the second touch is within the interval)", got.LastUsedAt, ts(10))
	}
	must(t, db.TouchToken(ctx, id, ts(20), ts(19)))
	got, _ = db.GetToken(ctx, id)
	if !got.LastUsedAt.Equal(ts(20)) {
		t.Fatalf("last used %v, want %v", got.LastUsedAt, ts(20))
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestLoginFailures: failures count per name, start again after the window, lock
// and clear; concurrent failures all count.
func TestLoginFailures(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		_, err := db.GetLoginFailures(ctx, "ann")
		wantCode(t, err, models.ENOTFOUND)
		for i := 1; i <= 3; i++ {
			n, err := db.AddLoginFailure(ctx, "ann", ts(i), ts(0))
			must(t, err)
			if n != i {
				t.Fatalf("failure %d counted as %d", i, n)
			}
		}
		n, err := db.AddLoginFailure(ctx, "ann", ts(30), ts(15))
		must(t, err)
		if n != 1 {
			t.Fatalf("a failure after the window counted as %d, want 1", n)
		}
		must(t, db.LockLogin(ctx, "ann", ts(45)))
		f, err := db.GetLoginFailures(ctx, "ann")
		must(t, err)
		if f.Failures != 0 || f.LockedUntil == nil || !f.LockedUntil.Equal(ts(45)) || !f.LastFailureAt.Equal(ts(30)) {
			t.Fatalf("after LockLogin: %+v", f)
		}
		must(t, db.ClearLoginFailures(ctx, "ann"))
		_, err = db.GetLoginFailures(ctx, "ann")
		wantCode(t, err, models.ENOTFOUND)

		// Stale names are forgotten by the next failure of another name.
		_, err = db.AddLoginFailure(ctx, "old", ts(1), ts(0))
		must(t, err)
		_, err = db.AddLoginFailure(ctx, "new", ts(40), ts(25))
		must(t, err)
		_, err = db.GetLoginFailures(ctx, "old")
		wantCode(t, err, models.ENOTFOUND)

		var wg sync.WaitGroup
		now := time.Now()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := db.AddLoginFailure(ctx, "bob", now, now.Add(-time.Minute)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		f, err = db.GetLoginFailures(ctx, "bob")
		must(t, err)
		if f.Failures != 8 {
			t.Fatalf("8 concurrent failures counted as %d", f.Failures)
		}
	})
}

// TestAgentEventsAndParentTask: events about an agent list by agent, oldest first;
// a task keeps the task it was spawned from.
func TestAgentEventsAndParentTask(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		a := agent(t, db, "bot", "developer")
		b := agent(t, db, "other", "developer")
		for i, id := range []int64{a.ID, b.ID, a.ID, 0} {
			e := &models.Event{Type: "agent.changed", CreatedAt: ts(i)}
			if id != 0 {
				e.AgentID = &id
			}
			must(t, db.AppendEvent(ctx, e))
		}
		evs, err := db.ListAgentEvents(ctx, a.ID, 10)
		must(t, err)
		if len(evs) != 2 || evs[0].ID >= evs[1].ID || *evs[0].AgentID != a.ID || !evs[1].CreatedAt.Equal(ts(2)) {
			t.Fatalf("ListAgentEvents = %+v", evs)
		}
		last, err := db.ListAgentEvents(ctx, a.ID, 1)
		must(t, err)
		if len(last) != 1 || last[0].ID != evs[1].ID {
			t.Fatalf("ListAgentEvents limit 1 = %+v, want the newest", last)
		}

		parent := task(t, db, a.ID, "developer", nil)
		child := &models.Task{Title: "child", Role: "developer", State: models.TaskPending, ParentTaskID: &parent.ID}
		must(t, db.CreateTask(ctx, child))
		got, err := db.GetTask(ctx, child.ID)
		must(t, err)
		if got.ParentTaskID == nil || *got.ParentTaskID != parent.ID {
			t.Fatalf("parent task %v, want %d", got.ParentTaskID, parent.ID)
		}
	})
}

// TestMigration4 upgrades a database from version 3: existing tokens expire in 90
// days, earlier agent and token events name their agent, agents have an empty sandbox.
func TestMigration4(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := ctxT(t)
			db, err := store.Open(ctx, storetest.Empty(t, dialect))
			must(t, err)
			defer db.Close()
			must(t, db.MigrateTo(ctx, 3))
			var agentID int64
			must(t, db.SQL().QueryRowContext(ctx, "INSERT INTO agents (name, kind, roles) VALUES ('ann', 'human', '[\"lead\"]') RETURNING id").Scan(&agentID))
			_, err = db.SQL().ExecContext(ctx, "INSERT INTO tokens (agent_id, name, hash) VALUES ($1, 'old', 'h1')", agentID)
			must(t, err)
			for _, ev := range []string{`{"agent":"ann","kind":"human"}`, `{"agent":"nobody"}`} {
				_, err = db.SQL().ExecContext(ctx, "INSERT INTO events (type, data) VALUES ('agent.created', $1)", ev)
				must(t, err)
			}
			_, err = db.SQL().ExecContext(ctx, "INSERT INTO events (type, data) VALUES ('task.created', '{\"agent\":\"ann\"}')")
			must(t, err)
			must(t, db.Migrate(ctx))

			tok, a, err := db.TokenByHash(ctx, "h1")
			must(t, err)
			if tok.ExpiresAt == nil || time.Until(*tok.ExpiresAt) < 89*24*time.Hour || time.Until(*tok.ExpiresAt) > 91*24*time.Hour {
				t.Fatalf("an existing token expires at %v, want in 90 days", tok.ExpiresAt)
			}
			if tok.RevokedAt != nil || tok.TaskID != nil || !a.Sandbox.IsZero() {
				t.Fatalf("after the upgrade: token %+v, agent sandbox %+v", tok, a.Sandbox)
			}
			evs, err := db.ListAgentEvents(ctx, agentID, 10)
			must(t, err)
			if len(evs) != 1 || evs[0].Type != "agent.created" {
				t.Fatalf("events about ann after the upgrade: %+v, want her agent.created only", evs)
			}
		})
	}
}
