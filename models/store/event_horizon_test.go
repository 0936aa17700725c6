package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestEventsFourRunnersReaderSkipsNone is issue #34's event test: four writers (as
// four runners would be) append events on PostgreSQL, each in its own transactions,
// holding them open for different lengths after the insert (so ids commit out of
// order, with no lock to stop it), while a reader follows ListEvents, a second
// reader resumes from a LastEventID taken mid-run, and a subscriber follows the
// announcements. The readers must see every id exactly once and in order, never one
// before a smaller id that commits later; the last id must be announced.
func TestEventsFourRunnersReaderSkipsNone(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	const writers, perWriter = 4, 25
	wake := db.Subscribe(ctx)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				hold := time.Duration((w*7+i*3)%4) * 3 * time.Millisecond // 0 to 9 ms, per writer and round
				err := db.InTx(ctx, func(tx models.Tx) error {
					for range 1 + (w+i)%3 {
						if err := tx.AppendEvent(ctx, &models.Event{Type: "order.test"}); err != nil {
							return err
						}
					}
					tx.BeforeCommit(func() { time.Sleep(hold) }) // inserted, not committed
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	defer func() { <-done }() // the writers report to t: they end before the test does
	total := int64(0)
	for w := range writers {
		for i := range perWriter {
			total += int64(1 + (w+i)%3)
		}
	}

	main, resumed := &follower{}, &follower{}
	var announced int64
	var err error
	for finished := false; !finished && err == nil; {
		select {
		case <-done:
			finished = true
		case id := <-wake:
			announced = id
		default:
		}
		if err == nil {
			err = main.follow(ctx, db)
		}
		if err == nil && resumed.started == nil && main.last > total/3 {
			err = resumed.start(ctx, db)
		}
		if err == nil && resumed.started != nil {
			err = resumed.follow(ctx, db)
		}
	}
	must(t, err)
	deadline := time.After(10 * time.Second) // the last commits are announced, and readable
	for main.last < total || resumed.last < total || announced < total {
		select {
		case id := <-wake:
			announced = id
		case <-deadline:
			t.Fatalf("after the writers: read %d and %d (resumed after %d), announced %d, want %d", main.last, resumed.last, *resumed.started, announced, total)
		case <-time.After(5 * time.Millisecond):
		}
		must(t, main.follow(ctx, db))
		must(t, resumed.follow(ctx, db))
	}
}

// follower reads events after its cursor and fails on the first id out of order:
// with no rollbacks every id commits, so a reader must see exactly last+1, last+2, …
type follower struct {
	started *int64
	last    int64
}

func (f *follower) start(ctx context.Context, db *store.DB) error {
	id, err := db.LastEventID(ctx)
	f.started, f.last = &id, id
	return err
}

func (f *follower) follow(ctx context.Context, db *store.DB) error {
	evs, err := db.ListEvents(ctx, f.last, 1000)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if e.ID != f.last+1 {
			return fmt.Errorf("the reader saw event %d right after %d: an id was visible before a smaller one committed", e.ID, f.last)
		}
		f.last = e.ID
	}
	return nil
}

// readable waits up to 10 s for n events after after to be readable and returns
// them: an older transaction of the database may hold the horizon back a moment.
func readable(t *testing.T, db *store.DB, after int64, n int) []models.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := db.ListEvents(ctxT(t), after, 1000)
		must(t, err)
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventAppendTakesNoLock: transaction B writes first (so its transaction id is
// the older), then A appends an event and stays open after inserting it, then B
// appends one and commits without waiting for A (with migration 0003's append lock B
// waited until A ended). Until A commits, readers see neither: B's event id is above
// A's, which may still commit, and B's older transaction id must not make it look
// safe (the subtransaction insertEventsPostgres writes events in).
func TestEventAppendTakesNoLock(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	lead := agent(t, db, "lead", "lead")
	bWrote, aInserted, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() {
		<-bWrote
		aDone <- db.InTx(ctx, func(tx models.Tx) error {
			if err := tx.AppendEvent(ctx, &models.Event{Type: "a"}); err != nil {
				return err
			}
			tx.BeforeCommit(func() { close(aInserted); <-release })
			return nil
		})
	}()
	// B does not wait for its event to be readable either (WithoutEventWait).
	bCtx, cancel := context.WithTimeout(models.WithoutEventWait(ctx), 3*time.Second)
	defer cancel()
	go func() {
		bDone <- db.InTx(bCtx, func(tx models.Tx) error {
			if err := tx.CreateGoal(bCtx, &models.Goal{Title: "b", CreatorID: lead.ID}); err != nil {
				return err
			}
			close(bWrote)
			<-aInserted
			return tx.AppendEvent(bCtx, &models.Event{Type: "b"})
		})
	}()
	start := time.Now()
	if err := <-bDone; err != nil {
		close(release)
		t.Fatalf("B, appending while A is open after its append: %v after %s (it waited for A)", err, time.Since(start).Round(time.Millisecond))
	}
	evs, err := db.ListEvents(ctx, 0, 10)
	must(t, err)
	last, err := db.LastEventID(ctx)
	must(t, err)
	if len(evs) != 0 || last != 0 {
		close(release)
		t.Fatalf("with A open, readers see %d events, last id %d; want none: B's id is above A's", len(evs), last)
	}
	close(release)
	must(t, <-aDone)
	evs = readable(t, db, 0, 2)
	if len(evs) != 2 || evs[0].Type != "a" || evs[1].Type != "b" || evs[0].ID >= evs[1].ID {
		t.Fatalf("after A commits: %+v, want a then b", evs)
	}
}

// TestEventTransactionIDBeforeEventID: a transaction whose first write is its events
// must have its transaction id before it draws their ids (the events_xid_first
// trigger); otherwise, between drawing id g and writing the row, it holds g without
// being a running transaction that the horizon waits for. A test-only trigger stalls
// the row of event "slow" after its id is drawn, while a later event commits.
func TestEventTransactionIDBeforeEventID(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	for _, q := range []string{
		`CREATE FUNCTION test_slow_event() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.type = 'slow' THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER test_slow_event BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_slow_event()`,
	} {
		_, err := db.SQL().ExecContext(ctx, q)
		must(t, err)
	}
	// nextval gives its transaction an id when it logs the sequence, for the first
	// value and then every 32nd: the slow event's id is not the first.
	must(t, db.AppendEvent(ctx, &models.Event{Type: "first"}))
	slowDone := make(chan error, 1)
	go func() { slowDone <- db.AppendEvent(ctx, &models.Event{Type: "slow"}) }()
	for drawn := int64(1); drawn < 2; { // the slow event has its id, and sleeps before its row
		must(t, db.SQL().QueryRowContext(ctx, "SELECT last_value FROM events_id_seq").Scan(&drawn))
		time.Sleep(5 * time.Millisecond)
	}
	must(t, db.AppendEvent(models.WithoutEventWait(ctx), &models.Event{Type: "fast"}))
	evs, err := db.ListEvents(ctx, 1, 10)
	must(t, err)
	if len(evs) != 0 {
		<-slowDone
		t.Fatalf("while the slow event is being written, readers see %+v; want none: its id is below", evs)
	}
	must(t, <-slowDone)
	evs = readable(t, db, 1, 2)
	if len(evs) != 2 || evs[0].Type != "slow" || evs[1].Type != "fast" {
		t.Fatalf("after both commit: %+v, want slow then fast", evs)
	}
}

// TestSubscribeAnnouncesHeldBackEvents: an event that commits while an older
// transaction is open is announced only when it is readable, and then even though
// the older transaction ends without appending anything (no notification follows):
// followHorizon looks again while events wait beyond the horizon.
func TestSubscribeAnnouncesHeldBackEvents(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	lead := agent(t, db, "lead", "lead")
	wake := db.Subscribe(ctx)
	end, older := holdWriteOpen(t, ctx, db, lead.ID, "older")
	e := &models.Event{Type: "held"}
	must(t, db.AppendEvent(models.WithoutEventWait(ctx), e))
	select {
	case id := <-wake:
		close(end)
		t.Fatalf("announced %d while the older transaction is open", id)
	case <-time.After(300 * time.Millisecond):
	}
	close(end)
	must(t, <-older)
	select {
	case id := <-wake:
		if id != e.ID {
			t.Fatalf("announced %d, want %d", id, e.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event was never announced after the older transaction ended")
	}
}

// TestInTxReturnsWhenItsEventsAreReadable: whoever commits events reads them back
// at once: on PostgreSQL InTx returns only when they are below the horizon, here
// when an older transaction ends (without WithoutEventWait).
func TestInTxReturnsWhenItsEventsAreReadable(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	lead := agent(t, db, "lead", "lead")
	end, older := holdWriteOpen(t, ctx, db, lead.ID, "older")
	appended := make(chan error, 1)
	go func() { appended <- db.AppendEvent(ctx, &models.Event{Type: "mine"}) }()
	select {
	case err := <-appended:
		close(end)
		t.Fatalf("AppendEvent returned (%v) while its event is held back by an older transaction", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(end)
	must(t, <-older)
	must(t, <-appended)
	evs, err := db.ListEvents(ctx, 0, 10)
	must(t, err)
	if len(evs) != 1 || evs[0].Type != "mine" {
		t.Fatalf("right after AppendEvent returned, readers see %+v, want the event", evs)
	}
}

// TestOtherDatabasesDoNotHoldEventsBack: a transaction open in another database of
// the server (another test, another application) cannot hold our ids, so our events
// are readable at once.
func TestOtherDatabasesDoNotHoldEventsBack(t *testing.T) {
	db, other := storetest.Open(t, store.DialectPostgres), storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	lead := agent(t, other, "lead", "lead")
	end, done := holdWriteOpen(t, ctx, other, lead.ID, "elsewhere")
	defer func() { close(end); must(t, <-done) }()
	start := time.Now()
	must(t, db.AppendEvent(ctx, &models.Event{Type: "here"}))
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("AppendEvent waited %s for a transaction of another database", waited.Round(time.Millisecond))
	}
	if evs, err := db.ListEvents(ctx, 0, 10); err != nil || len(evs) != 1 {
		t.Fatalf("readers see %+v (%v), want the event", evs, err)
	}
}

// holdWriteOpen starts a transaction of db that writes a goal and stays open until
// end is closed; it returns once the write is done, with where the transaction's
// result arrives.
func holdWriteOpen(t *testing.T, ctx context.Context, db *store.DB, creator int64, title string) (end chan struct{}, result chan error) {
	t.Helper()
	wrote := make(chan struct{})
	end, result = make(chan struct{}), make(chan error, 1)
	go func() {
		result <- db.InTx(ctx, func(tx models.Tx) error {
			if err := tx.CreateGoal(ctx, &models.Goal{Title: title, CreatorID: creator}); err != nil {
				return err
			}
			close(wrote)
			<-end
			return nil
		})
	}()
	<-wrote
	return end, result
}
