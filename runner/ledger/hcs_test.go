package ledger

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger/hcsfake"
	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
)

// fakeHCS starts a fake node with a topic and an HCS ledger configured for it with
// short backoffs.
func fakeHCS(t testing.TB) (*hcsfake.Node, *HCS, string) {
	t.Helper()
	node := hcsfake.StartT(t)
	topic := node.CreateTopic("test")
	h := newHCSFor(t, node, topic)
	return node, h, topic
}

func newHCSFor(t testing.TB, node *hcsfake.Node, topic string) *HCS {
	t.Helper()
	key, err := hiero.PrivateKeyGenerateEd25519()
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHCS(HCSConfig{
		Network: node.Network(), OperatorID: "0.0.1001", OperatorKey: SecretFromKey(key), TopicID: topic,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, NodeBackoff: 5 * time.Millisecond,
		ReceiptAttempts: 3, GRPCDeadline: 2 * time.Second, RequestTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func TestHCSPrepareSubmitLookup(t *testing.T) {
	node, h, topic := fakeHCS(t)
	ctx := context.Background()
	e, _ := TaskComplete{TaskID: 1, Contract: hashA, At: time.Now()}.Entry()
	e.ID = 1
	if err := h.Prepare(ctx, e); err != nil {
		t.Fatal(err)
	}
	if e.TxID == "" || len(e.TxBytes) == 0 {
		t.Fatal("not prepared")
	}
	if _, ok, err := h.Lookup(ctx, e); ok || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("before sending: %v %v", ok, err)
	}
	r, err := h.Submit(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sequence != 1 || len(r.RunningHash) != 48 || r.TxID != e.TxID {
		t.Fatalf("%+v", r)
	}
	// Sending the same bytes again is harmless: DUPLICATE_TRANSACTION, same receipt.
	r2, err := h.Submit(ctx, e)
	if err != nil || r2.Sequence != 1 {
		t.Fatalf("resend: %+v %v", r2, err)
	}
	msgs := node.Messages(topic)
	if len(msgs) != 1 || !bytes.Equal(msgs[0].Contents, e.Message) || msgs[0].TxID != e.TxID {
		t.Fatalf("%+v", msgs)
	}
	if st := node.Stats(); st.Duplicates != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestHCSCreateTopic(t *testing.T) {
	node := hcsfake.StartT(t)
	h := newHCSFor(t, node, "")
	sub, _ := hiero.PrivateKeyGenerateEcdsa()
	id, err := h.CreateTopic(context.Background(), "countersign", SecretFromKey(sub))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hiero.TopicIDFromString(id); err != nil || node.Messages(id) == nil && id == "" {
		t.Fatalf("topic %q: %v", id, err)
	}
	e, _ := TaskComplete{TaskID: 1, Contract: hashA, At: time.Now()}.Entry()
	if err := h.Prepare(context.Background(), e); err == nil {
		t.Fatal("prepared without a topic")
	}
}

// An expired transaction that never reached consensus is replaced by a new one, once.
func TestHCSExpiredIsReprepared(t *testing.T) {
	node, h, topic := fakeHCS(t)
	s := newMemStore()
	appendEntries(t, s, 1, 1)
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	h.SetClock(now)
	node.SetClock(now)
	ctx := context.Background()

	// Prepare and save, then "crash" before sending; come back after the window.
	e := s.all()[0]
	if err := h.Prepare(ctx, &e); err != nil {
		t.Fatal(err)
	}
	_ = s.UpdateLedgerEntry(ctx, &e)
	old := e.TxID
	mu.Lock()
	clock = clock.Add(DefaultValidDuration + time.Minute)
	mu.Unlock()

	p := NewPublisher(s, h, Options{Logger: quiet})
	if _, err := p.PostNext(ctx); err == nil {
		t.Fatal("expired transaction posted")
	}
	got := s.all()[0]
	if got.TxID != "" || got.Attempts != 1 || got.LastError == "" || got.Status != models.LedgerPending {
		t.Fatalf("after expiry: %+v", got)
	}
	t.Log(got.LastError)
	if n, err := p.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	got = s.all()[0]
	if got.TxID == old || got.Sequence != 1 || len(node.Messages(topic)) != 1 {
		t.Fatalf("%+v", got)
	}
}

// crashStore stands for a process that dies: once dead, it cannot write.
type crashStore struct {
	*memStore
	dead atomic.Bool
}

func (c *crashStore) UpdateLedgerEntry(ctx context.Context, e *models.LedgerEntry) error {
	if c.dead.Load() {
		return errors.New("process crashed")
	}
	return c.memStore.UpdateLedgerEntry(ctx, e)
}

// crashLedger kills its process right after an entry's message was sent (before the
// receipt is recorded) or right after an entry was prepared and saved (before it was
// sent). It is a Pipeline when its ledger is, and counts the most entries it ever had
// sent and not yet awaited.
type crashLedger struct {
	Ledger
	store       *crashStore
	afterSend   map[int64]bool
	afterSave   map[int64]bool
	crashed     chan int64
	crashedOnce sync.Once
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
}

func (c *crashLedger) crash(id int64) {
	c.store.dead.Store(true)
	c.crashedOnce.Do(func() { c.crashed <- id })
}

func (c *crashLedger) Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	if c.afterSave[e.ID] {
		c.crash(e.ID)
		return Receipt{}, errors.New("crashed before sending")
	}
	r, err := c.Ledger.Submit(ctx, e)
	if c.afterSend[e.ID] {
		c.crash(e.ID)
		return Receipt{}, errors.New("crashed before recording")
	}
	return r, err
}

func (c *crashLedger) Send(ctx context.Context, e *models.LedgerEntry) error {
	if c.afterSave[e.ID] {
		c.crash(e.ID)
		return errors.New("crashed before sending")
	}
	err := c.Ledger.(Pipeline).Send(ctx, e)
	if c.afterSend[e.ID] {
		c.crash(e.ID)
		return errors.New("crashed before recording")
	}
	if err == nil {
		n := c.inFlight.Add(1)
		for m := c.maxInFlight.Load(); n > m && !c.maxInFlight.CompareAndSwap(m, n); m = c.maxInFlight.Load() {
		}
	}
	return err
}

// Await stands for a network where consensus takes a moment (the fake's is
// immediate), so that entries overlap in flight.
func (c *crashLedger) Await(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	defer c.inFlight.Add(-1)
	if !sleepCtx(ctx, 3*time.Millisecond) {
		return Receipt{}, ctx.Err()
	}
	return c.Ledger.(Pipeline).Await(ctx, e)
}

// TestHCSExactlyOnceAcceptance posts 200 entries, pipelined, through the real SDK to
// three fake nodes while injecting the fault mix (every fifth call BUSY, every fourth
// reply dropped) on top of queued BUSY, unavailable and lost-reply faults, and two
// crashes with a new publisher (a new process: its own HCS client) taking over, and
// checks that the topic holds exactly the 200 messages, in order, with no duplicates
// and no gaps, that every row recorded its own message's receipt, and that several
// transactions were in flight at once.
func TestHCSExactlyOnceAcceptance(t *testing.T) {
	const total = 200
	node := hcsfake.StartNodesT(t, 3)
	topic := node.CreateTopic("test")
	node.SetSchedule(faultMix)
	ms := newMemStore()
	lock := &memLock{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()

	// Process A: crashes right after sending entry 60, then (its successor) B crashes
	// after saving the prepared entry 130 but before sending it.
	type proc struct {
		p *Publisher
		c *crashLedger
		h *memLockHandle
	}
	start := func(afterSend, afterSave map[int64]bool) proc {
		cs := &crashStore{memStore: ms}
		cl := &crashLedger{Ledger: newHCSFor(t, node, topic), store: cs, afterSend: afterSend, afterSave: afterSave, crashed: make(chan int64, 1)}
		lh := lock.handle()
		p := NewPublisher(cs, cl, Options{Logger: quiet, Lock: lh, PollInterval: 20 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return proc{p, cl, lh}
	}
	kill := func(pr proc) {
		if err := pr.p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		_ = pr.h.Unlock(ctx) // the dead process's session ends: its lock goes
	}

	// Entries arrive while publishing, and faults are injected along the way.
	go feedWithFaults(t, ms, node, total)

	a := start(map[int64]bool{60: true}, nil)
	select {
	case id := <-a.c.crashed:
		t.Logf("process A crashed after sending entry %d", id)
	case <-ctx.Done():
		t.Fatal("A never crashed")
	}
	b := start(nil, map[int64]bool{130: true}) // waits for A's lock
	time.Sleep(50 * time.Millisecond)
	kill(a)
	select {
	case id := <-b.c.crashed:
		t.Logf("process B crashed after saving entry %d", id)
	case <-ctx.Done():
		t.Fatal("B never crashed")
	}
	kill(b)
	c := start(nil, nil)
	defer func() { _ = c.p.Stop(context.Background()) }()

	waitAllPosted(t, ctx, ms, total)

	took := time.Since(began)
	checkTopic(t, node, topic, ms)
	st := node.Stats()
	t.Logf("%d entries in %v; fake nodes: %+v; in flight at most %d", total, took.Round(time.Millisecond), st, c.c.maxInFlight.Load())
	if st.Faults < 60 || st.Busy < 20 || st.Lost < 20 || st.Duplicates < 1 || node.PendingFaults() != 0 {
		t.Fatalf("faults were not all exercised: %+v", st)
	}
	if m := c.c.maxInFlight.Load(); m < 2 {
		t.Fatalf("at most %d transaction in flight: not pipelined", m)
	}
	if len(st.SubmitsByNode) < 2 {
		t.Fatalf("one node took every submission: %v", st.SubmitsByNode)
	}
}

// feedWithFaults appends total entries to ms, ten at a time, injecting the node's
// faults along the way.
func feedWithFaults(t *testing.T, ms *memStore, node *hcsfake.Node, total int) {
	for i := 1; i <= total; i += 10 {
		appendEntries(t, ms, i, 10)
		switch i {
		case 21:
			node.FailNext(hcsfake.FaultBusy, 3)
		case 41:
			node.FailNext(hcsfake.FaultUnavailable, 2)
		case 81:
			node.FailNext(hcsfake.FaultLoseReplyAfterAccept, 1)
		case 101:
			node.FailNext(hcsfake.FaultLoseReplyAfterAccept, 1)
			node.FailNext(hcsfake.FaultBusy, 1)
		case 151:
			node.FailNext(hcsfake.FaultUnavailable, 1)
			node.FailNext(hcsfake.FaultLoseReplyAfterAccept, 1)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAllPosted waits until ms holds total entries, all posted.
func waitAllPosted(t *testing.T, ctx context.Context, ms *memStore, total int) {
	t.Helper()
	for {
		rows := ms.all()
		done := len(rows) == total
		for _, r := range rows {
			if r.Status != models.LedgerPosted {
				done = false
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not all posted: %d rows", len(rows))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// BenchmarkHCSPublish measures entries posted per second through the real SDK to the
// fake node (prepare, save, submit, receipt, record).
func BenchmarkHCSPublish(b *testing.B) {
	_, h, _ := fakeHCS(b)
	s := newMemStore()
	appendEntries(b, s, 1, b.N)
	p := NewPublisher(s, h, Options{Logger: quiet})
	b.ResetTimer()
	start := time.Now()
	n, err := p.Drain(context.Background())
	if err != nil || n != b.N {
		b.Fatalf("%d %v", n, err)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "entries/s")
}
