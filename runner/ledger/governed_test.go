package ledger_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/ledger/hcsfake"
)

// TestVerifiedTasksReachHCSExactlyOnce is issue 4's acceptance end to end: tasks
// verified through the governance service, posted through the real SDK to the fake
// consensus node across BUSY, unavailable, lost replies and a crash between send and
// receipt, give exactly one task.complete each, in order; rejected and unfinished
// tasks give none.
func TestVerifiedTasksReachHCSExactlyOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			svc := models.NewService(db, ledger.Composer{})
			people := map[string]*models.Agent{}
			for name, role := range map[string]string{"lena": "lead", "bob": "developer", "rita": "reviewer", "vic": "tester"} {
				a := &models.Agent{Name: name, Kind: models.KindHuman, Roles: []string{role}}
				if err := svc.Agents.CreateAgent(ctx, models.System, a, ""); err != nil {
					t.Fatal(err)
				}
				people[name] = a
			}
			act := func(id int64, who string, a models.Action, in models.ActionInput) {
				t.Helper()
				if _, err := svc.Tasks.TaskAction(ctx, people[who], id, a, in); err != nil {
					t.Fatalf("task %d %s by %s: %v", id, a, who, err)
				}
			}
			newTask := func(title string) int64 {
				t.Helper()
				tk, err := svc.Tasks.CreateTask(ctx, people["lena"], models.TaskSpec{Title: title, Assignee: "bob", Approve: "any", Verify: "any"})
				if err != nil {
					t.Fatal(err)
				}
				act(tk.ID, "bob", models.ActStart, models.ActionInput{})
				act(tk.ID, "bob", models.ActSubmit, models.ActionInput{})
				return tk.ID
			}
			var verified, unverified []int64
			verify := func(n int) {
				for i := 0; i < n; i++ {
					id := newTask("ship it")
					act(id, "rita", models.ActApprove, models.ActionInput{})
					act(id, "vic", models.ActVerify, models.ActionInput{Notes: "checked"})
					verified = append(verified, id)
				}
			}
			// Unverified: rejected by the verifier, rejected in review, still in review.
			for i := 0; i < 3; i++ {
				id := newTask("rejected")
				act(id, "rita", models.ActApprove, models.ActionInput{})
				act(id, "vic", models.ActRejectVerification, models.ActionInput{Reason: "wrong"})
				unverified = append(unverified, id)
				id = newTask("rejected in review")
				act(id, "rita", models.ActReject, models.ActionInput{Reason: "not yet"})
				unverified = append(unverified, id)
				unverified = append(unverified, newTask("waiting"))
			}
			verify(120)

			node := hcsfake.StartT(t)
			topic := node.CreateTopic("countersign")
			hcs := newHCS(t, node, topic)
			opts := ledger.Options{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, PollInterval: 50 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}

			crashBeforeReceipt(t, db, hcs)
			node.FailNext(hcsfake.FaultBusy, 3)
			node.FailNext(hcsfake.FaultUnavailable, 2)
			node.FailNext(hcsfake.FaultLoseReplyAfterAccept, 3)
			pub := ledger.NewPublisher(db, newHCS(t, node, topic), opts)
			if err := pub.Start(ctx); err != nil {
				t.Fatal(err)
			}
			verify(80) // tasks verified while the publisher runs
			waitPosted(t, db, 200)
			if err := pub.Stop(ctx); err != nil {
				t.Fatal(err)
			}

			checkPostedOnce(t, node, topic, verified, unverified)
		})
	}
}

// crashBeforeReceipt leaves the oldest pending entry as a crash between send and
// receipt would: prepared and saved, accepted by the node, its receipt never recorded.
func crashBeforeReceipt(t *testing.T, db models.Store, hcs *ledger.HCS) {
	t.Helper()
	ctx := context.Background()
	// A crash between send and receipt: prepared and saved, accepted by the node,
	// receipt never recorded.
	pending, err := db.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending, Limit: 1})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %d", err, len(pending))
	}
	e := pending[0]
	if err := hcs.Prepare(ctx, &e); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateLedgerEntry(ctx, &e); err != nil {
		t.Fatal(err)
	}
	if _, err := hcs.Submit(ctx, &e); err != nil {
		t.Fatal(err)
	}
}

// checkPostedOnce checks that the topic holds one message for each verified task, in
// order, each task and transaction once, and none for an unverified task.
func checkPostedOnce(t *testing.T, node *hcsfake.Node, topic string, verified, unverified []int64) {
	t.Helper()
	msgs := node.Messages(topic)
	if len(msgs) != 200 {
		t.Fatalf("%d messages on the topic, want 200", len(msgs))
	}
	seen := map[int64]bool{}
	txs := map[string]bool{}
	for i, m := range msgs {
		parsed, err := ledger.ParseMessage(m.Contents)
		if err != nil {
			t.Fatal(err)
		}
		if parsed.Type != models.LedgerTaskComplete || parsed.Task != verified[i] || m.Sequence != uint64(i+1) {
			t.Fatalf("message %d: type %s task %d seq %d, want task.complete for task %d", i, parsed.Type, parsed.Task, m.Sequence, verified[i])
		}
		if seen[parsed.Task] || txs[m.TxID] {
			t.Fatalf("task %d or transaction %s posted twice", parsed.Task, m.TxID)
		}
		seen[parsed.Task], txs[m.TxID] = true, true
	}
	for _, id := range unverified {
		if seen[id] {
			t.Fatalf("unverified task %d reached the ledger", id)
		}
	}
}

func newHCS(t testing.TB, node *hcsfake.Node, topic string) *ledger.HCS {
	t.Helper()
	key, err := hiero.PrivateKeyGenerateEd25519()
	if err != nil {
		t.Fatal(err)
	}
	h, err := ledger.NewHCS(ledger.HCSConfig{
		Network: node.Network(), OperatorID: "0.0.1001", OperatorKey: ledger.SecretFromKey(key), TopicID: topic,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, NodeBackoff: 5 * time.Millisecond,
		ReceiptAttempts: 3, GRPCDeadline: 2 * time.Second, RequestTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// waitPosted waits until n entries are posted and none is pending.
func waitPosted(t *testing.T, db models.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		posted, err := db.ListLedger(context.Background(), models.LedgerFilter{Status: models.LedgerPosted, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		pending, _ := db.ListLedger(context.Background(), models.LedgerFilter{Status: models.LedgerPending, Limit: 1})
		if len(posted) == n && len(pending) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("entries not all posted within 60s")
}

// BenchmarkPublishStored measures entries posted per second from a real database, to
// the local chain and through the real SDK to the fake node:
//
//	go test -run '^$' -bench PublishStored -benchtime 500x ./runner/ledger/
func BenchmarkPublishStored(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		for _, target := range []string{"local", "hcs"} {
			b.Run(dialect+"/"+target, func(b *testing.B) {
				ctx := context.Background()
				db := storetest.Open(b, dialect)
				for i := 0; i < b.N; i++ {
					e, err := ledger.TaskComplete{TaskID: int64(i + 1), Agent: "bench", Verifier: "runner", Contract: ledger.SHA384Hex([]byte("contract")), Output: ledger.SHA384Hex([]byte("output")), At: time.Now()}.Entry()
					if err != nil {
						b.Fatal(err)
					}
					if err := db.AppendLedgerEntry(ctx, e); err != nil {
						b.Fatal(err)
					}
				}
				var l ledger.Ledger = ledger.NewLocal(db)
				if target == "hcs" {
					node := hcsfake.StartT(b)
					l = newHCS(b, node, node.CreateTopic("bench"))
				}
				p := ledger.NewPublisher(db, l, ledger.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				b.ResetTimer()
				start := time.Now()
				n, err := p.Drain(ctx)
				if err != nil || n != b.N {
					b.Fatalf("%d %v", n, err)
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "entries/s")
			})
		}
	}
}
