package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

func TestWebhookRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "admin")
		w := &models.Webhook{Name: "ops", URL: "https://example.test/hook", Events: []string{models.HookTaskBlocked, models.HookBudgetStopped},
			Secret: models.NewWebhookSecret(), PreviousSecret: models.NewWebhookSecret(), Enabled: true, DisabledReason: "none",
			CreatedBy: &boss.ID, CreatedAt: ts(1), UpdatedAt: ts(2)}
		allSet(t, w, "ID")
		must(t, db.CreateWebhook(ctx, w))
		got, err := db.GetWebhook(ctx, w.ID)
		must(t, err)
		equal(t, "GetWebhook", got, w)
		wantCode(t, db.CreateWebhook(ctx, &models.Webhook{Name: "ops", URL: "http://x", Events: []string{}, Secret: "s"}), models.ECONFLICT)

		w.Enabled, w.Events = false, []string{models.HookQuestionAsked}
		must(t, db.UpdateWebhook(ctx, w))
		got, err = db.GetWebhook(ctx, w.ID)
		must(t, err)
		equal(t, "after UpdateWebhook", got, w)

		e := &models.Event{Type: "task.blocked", Data: json.RawMessage(`{"a":1}`)}
		must(t, db.AppendEvent(ctx, e))
		d := &models.WebhookDelivery{WebhookID: w.ID, EventID: e.ID, Event: models.HookTaskBlocked, MessageID: "msg_1",
			Payload: json.RawMessage(`{"event":"task.blocked"}`), State: models.DeliveryDelivered, Attempts: 3, NextAttemptAt: ts(3),
			LastStatus: 204, LastError: "x", CreatedAt: ts(4), UpdatedAt: ts(5), DeliveredAt: tsp(6)}
		allSet(t, d, "ID")
		must(t, db.CreateWebhookDelivery(ctx, d))
		gd, err := db.GetWebhookDelivery(ctx, d.ID)
		must(t, err)
		equal(t, "GetWebhookDelivery", gd, d)
		list, err := db.ListWebhookDeliveries(ctx, w.ID, 10)
		must(t, err)
		if len(list) != 1 || list[0].ID != d.ID {
			t.Fatalf("ListWebhookDeliveries = %+v", list)
		}

		must(t, db.DeleteWebhook(ctx, w.ID))
		_, err = db.GetWebhookDelivery(ctx, d.ID)
		wantCode(t, err, models.ENOTFOUND)
		wantCode(t, db.DeleteWebhook(ctx, w.ID), models.ENOTFOUND)
	})
}

// TestOutboxSameTransaction: a transaction's events that cause notifications get their
// deliveries in that transaction, one per subscribed endpoint, and a rolled-back
// transaction leaves none; a budget stop is budget.stopped, not task.blocked.
func TestOutboxSameTransaction(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "admin")
		g := &models.Goal{Title: "Ship it", CreatorID: boss.ID}
		must(t, db.CreateGoal(ctx, g))
		tk := task(t, db, boss.ID, "developer", &g.ID)
		budgeted := task(t, db, boss.ID, "developer", &g.ID)
		all := &models.Webhook{Name: "all", URL: "http://a.test", Events: slices.Clone(models.HookNames), Secret: "s", Enabled: true}
		blockedOnly := &models.Webhook{Name: "blocked", URL: "http://b.test", Events: []string{models.HookTaskBlocked}, Secret: "s", Enabled: true}
		off := &models.Webhook{Name: "off", URL: "http://c.test", Events: slices.Clone(models.HookNames), Secret: "s", Enabled: false}
		for _, w := range []*models.Webhook{all, blockedOnly, off} {
			must(t, db.CreateWebhook(ctx, w))
		}
		events := func(tx models.Tx) {
			for _, e := range []*models.Event{
				{Type: "task.created", TaskID: &tk.ID},
				{Type: "task.blocked", TaskID: &tk.ID, GoalID: &g.ID, Data: json.RawMessage(`{"from":"in_progress","to":"blocked"}`)},
				{Type: "task.escalated", TaskID: &tk.ID, GoalID: &g.ID},
				{Type: "question.asked", TaskID: &tk.ID, GoalID: &g.ID},
				{Type: "goal.state_changed", GoalID: &g.ID, Data: json.RawMessage(`{"from":"active","to":"active"}`)},
				{Type: "goal.state_changed", GoalID: &g.ID, Data: json.RawMessage(`{"from":"active","to":"pending_verify"}`)},
				{Type: "task.blocked", TaskID: &budgeted.ID, GoalID: &g.ID},
			} {
				must(t, tx.AppendEvent(ctx, e))
			}
			p, _ := json.Marshal(models.BlockedPayload{TaskID: budgeted.ID, Attempts: []models.BlockedAttempt{{Stage: models.StageBudget, Failure: "spent"}}})
			must(t, tx.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxBlocked, TaskID: budgeted.ID, Title: "b", Payload: p}))
		}
		rolledBack := db.InTx(ctx, func(tx models.Tx) error {
			events(tx)
			return models.Errorf(models.ECONFLICT, "no")
		})
		wantCode(t, rolledBack, models.ECONFLICT)
		for _, w := range []*models.Webhook{all, blockedOnly} {
			list, err := db.ListWebhookDeliveries(ctx, w.ID, 100)
			must(t, err)
			if len(list) != 0 {
				t.Fatalf("rolled back: %d deliveries to %s", len(list), w.Name)
			}
		}
		must(t, db.InTx(ctx, func(tx models.Tx) error { events(tx); return nil }))
		got := func(w *models.Webhook) []string {
			list, err := db.ListWebhookDeliveries(ctx, w.ID, 100)
			must(t, err)
			var out []string
			for _, d := range list {
				out = append(out, d.Event)
				if d.State != models.DeliveryPending || d.Attempts != 0 || d.EventID == 0 {
					t.Errorf("delivery %+v", d)
				}
				var f models.HookFacts
				must(t, json.Unmarshal(d.Payload, &f))
				if f.EventID != d.EventID || f.Event != d.Event || f.GoalTitle != "Ship it" {
					t.Errorf("payload %s of %+v", d.Payload, d)
				}
			}
			slices.Sort(out)
			return out
		}
		if g, want := got(all), []string{"budget.stopped", "goal.pending_verify", "question.asked", "task.blocked", "task.escalated"}; !slices.Equal(g, want) {
			t.Errorf("all: %v, want %v", g, want)
		}
		if g, want := got(blockedOnly), []string{"task.blocked"}; !slices.Equal(g, want) {
			t.Errorf("blocked only: %v, want %v", g, want)
		}
		if g := got(off); len(g) != 0 {
			t.Errorf("disabled endpoint got %v", g)
		}
	})
}

// TestClaimWebhookDeliveries: a claim takes due deliveries of enabled endpoints once
// (concurrent claims never share one), counts the attempt and leases it; a recorded
// attempt settles it; 410 disables the endpoint; a redelivery is due again.
func TestClaimWebhookDeliveries(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		w := &models.Webhook{Name: "w", URL: "http://a.test", Events: []string{models.HookTaskBlocked}, Secret: "s", Enabled: true}
		must(t, db.CreateWebhook(ctx, w))
		base := time.Now().UTC().Truncate(time.Second)
		const n = 40
		for i := range n {
			e := &models.Event{Type: "x"}
			must(t, db.AppendEvent(ctx, e))
			must(t, db.CreateWebhookDelivery(ctx, &models.WebhookDelivery{WebhookID: w.ID, EventID: e.ID, Event: "task.blocked",
				MessageID: "m" + strconv.Itoa(i), State: models.DeliveryPending, NextAttemptAt: base, CreatedAt: base}))
		}
		claimConcurrently(t, ctx, db, base, w.ID, n)
		// Due again once the lease ran out.
		jobs, err := db.ClaimWebhookDeliveries(ctx, base.Add(2*time.Minute), time.Minute, 2)
		must(t, err)
		if len(jobs) != 2 || jobs[0].Delivery.Attempts != 2 {
			t.Fatalf("after the lease: %+v", jobs)
		}
		claimed := jobs[0].Delivery.NextAttemptAt
		del := jobs[0].Delivery
		at := base.Add(2 * time.Minute)
		models.DefaultRetryPolicy.Settle(&del, models.HookOutcome{At: at, Status: 500, Err: "boom"})
		a := &models.WebhookAttempt{DeliveryID: del.ID, WebhookID: w.ID, At: at, Status: 500, Error: "boom", DurationMS: 12}
		must(t, db.RecordWebhookAttempt(ctx, &del, claimed, a, ""))
		gd, err := db.GetWebhookDelivery(ctx, del.ID)
		must(t, err)
		if gd.State != models.DeliveryPending || gd.LastStatus != 500 || !gd.NextAttemptAt.After(at) {
			t.Fatalf("after a 500: %+v", gd)
		}
		log, err := db.ListWebhookAttempts(ctx, w.ID, 10)
		must(t, err)
		if len(log) != 1 || log[0].Status != 500 || log[0].DurationMS != 12 || log[0].Error != "boom" {
			t.Fatalf("log %+v", log)
		}
		// 410 disables the endpoint: nothing of it is claimed any more.
		del2 := jobs[1].Delivery
		models.DefaultRetryPolicy.Settle(&del2, models.HookOutcome{At: at, Status: 410})
		must(t, db.RecordWebhookAttempt(ctx, &del2, jobs[1].Delivery.NextAttemptAt,
			&models.WebhookAttempt{DeliveryID: del2.ID, WebhookID: w.ID, At: at, Status: 410}, "410 Gone"))
		gw, err := db.GetWebhook(ctx, w.ID)
		must(t, err)
		if gw.Enabled || gw.DisabledReason != "410 Gone" {
			t.Fatalf("after 410: %+v", gw)
		}
		jobs, err = db.ClaimWebhookDeliveries(ctx, base.Add(time.Hour), time.Minute, 100)
		must(t, err)
		if len(jobs) != 0 {
			t.Fatalf("a disabled endpoint's deliveries were claimed: %d", len(jobs))
		}
		// Enabled again and redelivered: due now.
		gw.Enabled = true
		must(t, db.UpdateWebhook(ctx, gw))
		must(t, db.RedeliverWebhook(ctx, del2.ID, base))
		gd, err = db.GetWebhookDelivery(ctx, del2.ID)
		must(t, err)
		if gd.State != models.DeliveryPending || !gd.NextAttemptAt.Equal(base) {
			t.Fatalf("redelivered: %+v", gd)
		}
		n2, err := db.PruneWebhookDeliveries(ctx, time.Now().Add(time.Hour))
		must(t, err)
		if n2 != 0 {
			t.Fatalf("pruned %d pending deliveries", n2)
		}
	})
}

// claimConcurrently claims the n due deliveries of webhook hookID from four
// workers at once and checks each was claimed exactly once; split out of
// TestClaimWebhookDeliveries to keep it short.
func claimConcurrently(t *testing.T, ctx context.Context, db *store.DB, base time.Time, hookID int64, n int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := db.ClaimWebhookDeliveries(ctx, base, time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.Delivery.ID]++
					if j.Webhook.ID != hookID || j.Delivery.Attempts != 1 || !j.Delivery.NextAttemptAt.Equal(base.Add(time.Minute)) {
						t.Errorf("job %+v", j)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct deliveries, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("delivery %d claimed %d times", id, c)
		}
	}
}
