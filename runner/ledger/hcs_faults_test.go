package ledger

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger/hcsfake"
	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
)

// faultMix is issue 17's: every fifth submission answered BUSY, every fourth other
// reply dropped after the node accepted the message (the client hears nothing and
// only a timeout tells it so — a reply lost on a real network).
var faultMix = hcsfake.Schedule{BusyEvery: 5, LoseReplyEvery: 4, Lose: hcsfake.FaultDropReplyAfterAccept}

// productionHCS is an HCS ledger for node with none of the tuning set: the timeouts,
// deadlines and backoffs are the ones serve runs with.
func productionHCS(t testing.TB, node *hcsfake.Node, topic string) *HCS {
	t.Helper()
	key, err := hiero.PrivateKeyGenerateEd25519()
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHCS(HCSConfig{Network: node.Network(), OperatorID: "0.0.1001", OperatorKey: SecretFromKey(key), TopicID: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// publishAll runs a publisher with its default options until every entry in s is
// posted or limit passes, and returns how long it took (limit when it did not finish).
func publishAll(t testing.TB, s *memStore, l Ledger, total int, limit time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	p := NewPublisher(s, l, Options{Logger: quiet})
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(context.Background()) }()
	done := allPosted(s, total)
	for !done() {
		select {
		case <-ctx.Done():
			return limit
		case <-time.After(10 * time.Millisecond):
		}
	}
	return time.Since(start)
}

// checkTopic asserts that the topic holds exactly the entries of s, one message each,
// in ID order, with sequence numbers 1..n (no gaps, no duplicates), and that every row
// recorded the receipt of its own message.
func checkTopic(t testing.TB, node *hcsfake.Node, topic string, s *memStore) {
	t.Helper()
	msgs, rows := node.Messages(topic), s.all()
	if len(msgs) != len(rows) {
		t.Fatalf("topic has %d messages for %d entries", len(msgs), len(rows))
	}
	txs := map[string]bool{}
	for i, m := range msgs {
		r := rows[i]
		switch {
		case m.Sequence != uint64(i+1):
			t.Fatalf("message %d has sequence %d", i+1, m.Sequence)
		case !bytes.Equal(m.Contents, r.Message):
			t.Fatalf("message %d is not entry %d's", i+1, r.ID)
		case txs[m.TxID]:
			t.Fatalf("transaction %s reached consensus twice", m.TxID)
		case r.Sequence != int64(m.Sequence) || r.TxID != m.TxID || r.RunningHash != encodeHex(m.RunningHash):
			t.Fatalf("entry %d recorded sequence %d tx %s; the topic has %d %s", r.ID, r.Sequence, r.TxID, m.Sequence, m.TxID)
		}
		txs[m.TxID] = true
	}
}

// postUnderFaults posts total entries with the production configuration to one fake
// node answering with faultMix, and fails unless all are posted exactly once, in
// order, within limit.
func postUnderFaults(t *testing.T, total int, limit time.Duration) {
	node := hcsfake.StartT(t)
	topic := node.CreateTopic("faults")
	node.SetSchedule(faultMix)
	s := newMemStore()
	appendEntries(t, s, 1, total)
	took := publishAll(t, s, productionHCS(t, node, topic), total, limit)
	st := node.Stats()
	t.Logf("%d of %d entries posted in %v; node: %d submits, %d busy, %d replies lost, %d duplicates, %d receipt queries",
		postedCount(s), total, took.Round(time.Millisecond), st.Submits, st.Busy, st.Lost, st.Duplicates, st.Receipts)
	if took >= limit {
		t.Fatalf("%d entries not posted within %v under every 4th reply lost, every 5th call BUSY", total, limit)
	}
	checkTopic(t, node, topic, s)
	if st.Busy == 0 || st.Lost == 0 {
		t.Fatalf("the fault mix was not exercised: %+v", st)
	}
}

func postedCount(s *memStore) int {
	n := 0
	for _, r := range s.all() {
		if r.Status == models.LedgerPosted {
			n++
		}
	}
	return n
}

// Issue 17: with every fourth reply lost and every fifth call BUSY, 24 messages are
// posted in under 60 s, exactly once and in order, with serve's default settings.
func TestHCSFaultMix24(t *testing.T) { postUnderFaults(t, 24, 60*time.Second) }

// Issue 17: the same fault mix, 200 messages in under 5 minutes.
func TestHCSFaultMix200(t *testing.T) { postUnderFaults(t, 200, 5*time.Minute) }

// A node that answers BUSY to everything is backed off on its own while the other
// pinned nodes take the messages: it sees one submission, not one per message (the
// SDK alone would retry BUSY on the same node, backing off up to 8s each time).
func TestHCSBusyNodeBacksOffAlone(t *testing.T) {
	const total = 60
	node := hcsfake.StartNodesT(t, 3)
	topic := node.CreateTopic("busy")
	node.SetNodeBusy("0.0.3", true) // the first pinned node: every transaction's first choice
	s := newMemStore()
	appendEntries(t, s, 1, total)
	took := publishAll(t, s, productionHCS(t, node, topic), total, 30*time.Second)
	st := node.Stats()
	t.Logf("%d entries in %v; submissions per node %v", postedCount(s), took.Round(time.Millisecond), st.SubmitsByNode)
	if took >= 30*time.Second {
		t.Fatalf("not posted within 30s with one BUSY node of three")
	}
	checkTopic(t, node, topic, s)
	if st.SubmitsByNode["0.0.3"] > 3 || st.SubmitsByNode["0.0.4"]+st.SubmitsByNode["0.0.5"] < total {
		t.Fatalf("the BUSY node was not backed off alone: %v", st.SubmitsByNode)
	}
}

// BenchmarkPublishFaults posts b.N entries with serve's default settings to the fake
// consensus network fault-free, then b.N more under issue 17's fault mix (every fifth
// call BUSY, every fourth reply dropped), in the same run, and reports both rates and
// their ratio; for one node (the setting) and for three:
//
//	go test -run '^$' -bench PublishFaults -benchtime 200x ./runner/ledger/
func BenchmarkPublishFaults(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			clean := publishRate(b, nodes, hcsfake.Schedule{})
			faults := publishRate(b, nodes, faultMix)
			b.ReportMetric(clean, "msgs/s-fault-free")
			b.ReportMetric(faults, "msgs/s-faults")
			b.ReportMetric(faults/clean, "ratio")
		})
	}
}

// publishRate posts b.N entries to a fresh fake network of nodes answering with
// sched and returns the messages posted per second.
func publishRate(b *testing.B, nodes int, sched hcsfake.Schedule) float64 {
	node := hcsfake.StartNodesT(b, nodes)
	topic := node.CreateTopic("bench")
	node.SetSchedule(sched)
	s := newMemStore()
	appendEntries(b, s, 1, b.N)
	took := publishAll(b, s, productionHCS(b, node, topic), b.N, 10*time.Minute)
	if postedCount(s) != b.N {
		b.Fatalf("%d of %d posted", postedCount(s), b.N)
	}
	return float64(b.N) / took.Seconds()
}
