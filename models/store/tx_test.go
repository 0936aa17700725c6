package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

func TestInTxRollsBackOnError(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boom := errors.New("boom")
		err := db.InTx(ctx, func(tx models.Tx) error {
			a := agent(t, tx, "ghost", "developer")
			task(t, tx, a.ID, "developer", nil)
			must(t, tx.AppendEvent(ctx, &models.Event{Type: "x"}))
			must(t, tx.AppendLedgerEntry(ctx, &models.LedgerEntry{Type: "t", Message: []byte("m")}))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx returned %v, want fn's error", err)
		}
		assertEmpty(t, db)
	})
}

func TestInTxRollsBackOnPanic(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		func() {
			defer func() {
				if p := recover(); p != "kaboom" {
					t.Fatalf("recovered %v, want the panic to propagate", p)
				}
			}()
			_ = db.InTx(ctx, func(tx models.Tx) error {
				agent(t, tx, "ghost", "developer")
				must(t, tx.AppendEvent(ctx, &models.Event{Type: "x"}))
				panic("kaboom")
			})
		}()
		assertEmpty(t, db)
		// The connection went back to the pool in a usable state.
		agent(t, db, "alive", "developer")
	})
}

// assertEmpty fails when anything but the built-in runner agent is stored.
func assertEmpty(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := ctxT(t)
	agents, err := db.ListAgents(ctx)
	must(t, err)
	tasks, err := db.ListTasks(ctx, models.TaskFilter{})
	must(t, err)
	events, err := db.ListEvents(ctx, 0, 0)
	must(t, err)
	ledger, err := db.ListLedger(ctx, models.LedgerFilter{})
	must(t, err)
	if len(agents) != 1 || len(tasks) != 0 || len(events) != 0 || len(ledger) != 0 {
		t.Fatalf("rolled-back writes persisted: %d agents, %d tasks, %d events, %d ledger entries", len(agents), len(tasks), len(events), len(ledger))
	}
}

// next waits for a value (or the channel's close) on ch.
func next(t *testing.T, ch <-chan int64) (int64, bool) {
	t.Helper()
	select {
	case id, ok := <-ch:
		return id, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event id within 10s")
		return 0, false
	}
}

// quiet fails when ch delivers something within d.
func quiet(t *testing.T, ch <-chan int64, d time.Duration) {
	t.Helper()
	select {
	case id := <-ch:
		t.Fatalf("unexpected event id %d", id)
	case <-time.After(d):
	}
}

func TestSubscribe(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		subCtx, cancel := context.WithCancel(ctx)
		// On PostgreSQL the listener also announces the current maximum when it
		// connects; the hub drops ids it has already delivered, so that is no extra
		// value here.
		ch := db.Subscribe(subCtx)

		var last *models.Event
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			for i := 0; i < 3; i++ {
				last = &models.Event{Type: "x"}
				must(t, tx.AppendEvent(ctx, last))
			}
			select {
			case id := <-ch:
				t.Errorf("event id %d delivered before commit", id)
			default:
			}
			return nil
		}))
		if id, _ := next(t, ch); id != last.ID {
			t.Fatalf("Subscribe delivered %d, want the newest id %d", id, last.ID)
		}

		_ = db.InTx(ctx, func(tx models.Tx) error {
			must(t, tx.AppendEvent(ctx, &models.Event{Type: "rolled back"}))
			return errors.New("no")
		})
		quiet(t, ch, 300*time.Millisecond)

		// A slow reader gets the newest id, not a backlog.
		for i := 0; i < 3; i++ {
			last = &models.Event{Type: "y"}
			must(t, db.AppendEvent(ctx, last))
		}
		deadline := time.After(10 * time.Second)
		for got := int64(0); got != last.ID; {
			select {
			case got = <-ch:
				if got > last.ID {
					t.Fatalf("got id %d beyond the last %d", got, last.ID)
				}
			case <-deadline:
				t.Fatalf("newest id %d never delivered", last.ID)
			}
		}

		cancel()
		if _, ok := next(t, ch); ok {
			// A value may still be pending; the channel must close after it.
			if _, ok := next(t, ch); ok {
				t.Fatal("channel not closed after its context ended")
			}
		}
	})
}

// TestSubscribeAcrossProcesses checks that on PostgreSQL a commit through one store
// (standing for another process) reaches a subscriber of another store.
func TestSubscribeAcrossProcesses(t *testing.T) {
	t.Parallel()
	cfg := storetest.Config(t, store.DialectPostgres)
	ctx := ctxT(t)
	a, err := store.Open(ctx, cfg)
	must(t, err)
	defer a.Close()
	b, err := store.Open(ctx, cfg)
	must(t, err)
	defer b.Close()

	ch := b.Subscribe(ctx)
	// The first event may reach b through the listener's catch-up query when it
	// connects; once b has heard of it the listener is connected, so the second can
	// only come through NOTIFY.
	for round := 0; round < 2; round++ {
		e := &models.Event{Type: "remote"}
		must(t, a.AppendEvent(ctx, e))
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case id := <-ch:
				if id == e.ID {
					break wait
				}
			case <-deadline:
				t.Fatalf("round %d: event %d committed by another store never reached the subscriber", round, e.ID)
			}
		}
	}
}

func TestCloseClosesSubscriptions(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ch := db.Subscribe(context.Background())
		must(t, db.Close())
		must(t, db.Close())
		for range ch {
		}
	})
}

func TestLockTaskSerialisesTransactions(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		tk := task(t, db, boss.ID, "developer", nil)

		locked := make(chan struct{})
		release := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.InTx(ctx, func(tx models.Tx) error {
				got, err := tx.LockTask(ctx, tk.ID)
				if err != nil {
					return err
				}
				got.Title = "first"
				if err := tx.UpdateTask(ctx, got); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		<-locked

		second := make(chan string, 1)
		go func() {
			err := db.InTx(ctx, func(tx models.Tx) error {
				got, err := tx.LockTask(ctx, tk.ID)
				if err != nil {
					return err
				}
				second <- got.Title
				got.Title += "+second"
				return tx.UpdateTask(ctx, got)
			})
			if err != nil {
				t.Error(err)
			}
			close(second)
		}()
		quiet := func() {
			select {
			case title := <-second:
				t.Fatalf("second transaction locked the task (title %q) while the first held it", title)
			case <-time.After(300 * time.Millisecond):
			}
		}
		quiet()
		close(release)
		wg.Wait()
		if title := <-second; title != "first" {
			t.Fatalf("second transaction saw title %q, want the first's committed %q", title, "first")
		}
		<-second // closed when the second transaction has finished
		got, err := db.GetTask(ctx, tk.ID)
		must(t, err)
		if got.Title != "first+second" {
			t.Fatalf("final title %q", got.Title)
		}
		err = db.InTx(ctx, func(tx models.Tx) error {
			_, err := tx.LockTask(ctx, 4242)
			return err
		})
		wantCode(t, err, models.ENOTFOUND)
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		must(t, db.Migrate(ctx))
		must(t, db.Migrate(ctx))
		ms, err := store.Migrations(db.Dialect())
		must(t, err)
		var n int64
		must(t, db.Gorm().WithContext(ctx).Table("schema_migrations").Count(&n).Error)
		if int(n) != len(ms) {
			t.Fatalf("schema_migrations has %d rows, want %d", n, len(ms))
		}
		agents, err := db.ListAgents(ctx)
		must(t, err)
		if len(agents) != 1 || agents[0].Name != models.RunnerAgentName {
			t.Fatalf("agents after migrating twice = %+v, want only the runner", agents)
		}
		must(t, db.Ping(ctx))
	})
}

func TestPingDetectsMissingMigration(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		must(t, db.Ping(ctx))
		must(t, db.Gorm().WithContext(ctx).Exec("DELETE FROM schema_migrations WHERE version = 1").Error)
		err := db.Ping(ctx)
		if err == nil || !strings.Contains(err.Error(), "0001") {
			t.Fatalf("Ping with migration 1 missing = %v, want an error naming 0001", err)
		}
	})
}

func TestPingUnmigrated(t *testing.T) {
	ctx := ctxT(t)
	db, err := store.Open(ctx, store.Config{SQLitePath: t.TempDir() + "/fresh.db"})
	must(t, err)
	defer db.Close()
	if err := db.Ping(ctx); err == nil || !strings.Contains(err.Error(), "0001") {
		t.Fatalf("Ping before Migrate = %v, want an error naming 0001", err)
	}
	must(t, db.Migrate(ctx))
	must(t, db.Ping(ctx))
}

func TestOpenRejectsUnknownURL(t *testing.T) {
	_, err := store.Open(context.Background(), store.Config{DatabaseURL: "mysql://user:secret@host/db"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Open(mysql URL) = %v, want an error that does not echo the URL", err)
	}
	_, err = store.Open(context.Background(), store.Config{})
	if err == nil {
		t.Fatal("Open with nothing configured succeeded")
	}
}

func TestInMemorySQLite(t *testing.T) {
	ctx := ctxT(t)
	db, err := store.Open(ctx, store.Config{SQLitePath: ":memory:"})
	must(t, err)
	defer db.Close()
	must(t, db.Migrate(ctx))
	agent(t, db, "mem", "developer")
	a, err := db.GetAgentByName(ctx, "mem")
	must(t, err)
	if a.Name != "mem" || db.Dialect() != store.DialectSQLite {
		t.Fatalf("in-memory store lost its data: %+v", a)
	}
}

// TestTxReadsAgentsOnce checks the transaction's agent memo: repeated reads agree with
// what the transaction wrote, callers cannot change it through what they were given,
// and it ends with the transaction.
func TestTxReadsAgentsOnce(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		a := agent(t, db, "memo", "developer")
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			got, err := tx.GetAgent(ctx, a.ID)
			must(t, err)
			got.Roles[0], got.Name = "tampered", "tampered"
			again, err := tx.GetAgent(ctx, a.ID)
			must(t, err)
			if again.Name != "memo" || again.Roles[0] != "developer" {
				t.Fatalf("a caller's change leaked into the memo: %+v", again)
			}
			again.Name, again.Roles = "renamed", []string{"reviewer"}
			must(t, tx.UpdateAgent(ctx, again))
			byID, err := tx.GetAgent(ctx, a.ID)
			must(t, err)
			byName, err := tx.GetAgentByName(ctx, "renamed")
			must(t, err)
			for _, g := range []*models.Agent{byID, byName} {
				if g.Name != "renamed" || g.Roles[0] != "reviewer" || g.ID != a.ID {
					t.Fatalf("after UpdateAgent in the transaction: %+v", g)
				}
			}
			_, err = tx.GetAgentByName(ctx, "memo")
			wantCode(t, err, models.ENOTFOUND)
			return nil
		}))
		// A rolled-back write leaves nothing behind in a later transaction.
		boom := errors.New("boom")
		err := db.InTx(ctx, func(tx models.Tx) error {
			cur, err := tx.GetAgent(ctx, a.ID)
			must(t, err)
			cur.Name = "rolled-back"
			must(t, tx.UpdateAgent(ctx, cur))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx = %v", err)
		}
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			got, err := tx.GetAgent(ctx, a.ID)
			must(t, err)
			if got.Name != "renamed" {
				t.Fatalf("after the rollback the agent is %q, want renamed", got.Name)
			}
			return nil
		}))
	})
}
