// Package hcsfake is an in-process fake Hedera consensus node for tests across the
// project. It speaks the real gRPC services (ConsensusService, CryptoService) of the
// hiero SDK's protobufs on 127.0.0.1, so the real SDK client talks to it unchanged:
// configure the HCS ledger with HEDERA_NETWORK=<node.Network()>.
//
// It does what the exactly-once protocol depends on: it decodes every transaction
// (Transaction.SignedTransactionBytes → SignedTransaction.BodyBytes →
// TransactionBody), refuses a repeated transaction id with DUPLICATE_TRANSACTION and
// never executes it twice, refuses expired transactions, reaches "consensus" at once,
// keeps a sequence number and running hash per topic, keeps every receipt for ever,
// and injects faults (BUSY, unavailable, a reply lost after the message was accepted),
// one at a time (FailNext), periodically (SetSchedule) or per node (SetNodeBusy).
//
// One Node may serve several node accounts (StartNodes): each has its own listener,
// all share one consensus state, as the nodes of one network do.
//
// It does not check signatures or charge fees, and its running hash uses the
// version-3 fields in plain big-endian concatenation, not the nodes' Java framing, so
// it is not byte-identical with the network's.
package hcsfake

import (
	"context"
	"crypto/sha512"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Fault is a failure the node can inject into its next submitMessage calls.
type Fault int

// Faults.
const (
	// FaultBusy answers the submission with the BUSY precheck code, without accepting
	// it (the SDK retries).
	FaultBusy Fault = iota + 1
	// FaultUnavailable fails the call with gRPC Unavailable before anything is
	// accepted (the SDK retries, possibly after marking the node unhealthy).
	FaultUnavailable
	// FaultLoseReplyAfterAccept accepts the message (it reaches consensus) and then
	// fails the call with gRPC Unavailable, as if the reply were lost on the way back.
	// The SDK resends the same id and sees DUPLICATE_TRANSACTION.
	FaultLoseReplyAfterAccept
	// FaultDropReplyAfterAccept accepts the message and then never answers: the call
	// hangs until the client gives up (its gRPC deadline) or the node closes. This is
	// a reply lost on a real network, where nobody tells the client it is gone.
	FaultDropReplyAfterAccept
)

// Schedule injects faults periodically, counted over all submitMessage calls the
// node's endpoints receive, from 1: call k answers BUSY (accepting nothing) when
// BusyEvery divides k; of the other calls, every LoseReplyEvery-th loses its reply,
// whatever the reply said, as Lose (FaultDropReplyAfterAccept when zero) describes.
// Faults queued with FailNext come first and do not count. Zero fields inject nothing.
type Schedule struct {
	BusyEvery      int
	LoseReplyEvery int
	Lose           Fault // FaultLoseReplyAfterAccept or FaultDropReplyAfterAccept
}

// String names the fault.
func (f Fault) String() string {
	switch f {
	case FaultBusy:
		return "busy"
	case FaultUnavailable:
		return "unavailable"
	case FaultLoseReplyAfterAccept:
		return "lose-reply-after-accept"
	case FaultDropReplyAfterAccept:
		return "drop-reply-after-accept"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Message is one message as consensus saw it.
type Message struct {
	Topic       string // "0.0.N"
	Sequence    uint64
	RunningHash []byte // 48 bytes
	ConsensusAt time.Time
	TxID        string // the SDK's form: 0.0.payer@seconds.nanoseconds
	Contents    []byte
}

// Stats counts what the node saw.
type Stats struct {
	Submits    int // submitMessage calls
	Accepted   int // messages that reached consensus
	Duplicates int // DUPLICATE_TRANSACTION answers
	Expired    int // TRANSACTION_EXPIRED answers
	Faults     int // injected faults
	Busy       int // BUSY answers (injected)
	Lost       int // replies lost or dropped (injected)
	Receipts   int // receipt queries
	// SubmitsByNode counts submitMessage calls per node account ("0.0.3").
	SubmitsByNode map[string]int
}

type topic struct {
	memo string
	seq  uint64
	hash []byte
	msgs []Message
}

type record struct {
	receipt *services.TransactionReceipt
}

// endpoint is one node account's listener.
type endpoint struct {
	lis  net.Listener
	srv  *grpc.Server
	acct int64
}

// Node is a running fake consensus network of one or more node accounts.
type Node struct {
	eps     []*endpoint
	closing chan struct{} // closed by Close: dropped replies stop hanging

	mu        sync.Mutex
	now       func() time.Time
	lastCons  time.Time
	topics    map[int64]*topic
	nextTopic int64
	records   map[string]*record
	faults    []Fault
	schedule  Schedule
	calls     int // submitMessage calls counted by the schedule
	replies   int // of them, calls not answered BUSY by the schedule
	busyNodes map[int64]bool
	stats     Stats
	closed    bool
}

// Start listens on 127.0.0.1:0 as node account 0.0.3 and serves until Close or until
// ctx ends.
func Start(ctx context.Context) (*Node, error) { return StartNodes(ctx, 1) }

// StartNodes starts count node accounts (0.0.3, 0.0.4, …), each on its own
// 127.0.0.1 port, sharing one consensus state; they serve until Close or until ctx
// ends.
func StartNodes(ctx context.Context, count int) (*Node, error) {
	n := &Node{
		closing: make(chan struct{}), now: time.Now, topics: map[int64]*topic{}, nextTopic: 1001,
		records: map[string]*record{}, busyNodes: map[int64]bool{},
	}
	n.stats.SubmitsByNode = map[string]int{}
	for i := range max(count, 1) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("hcsfake: listen: %w", err)
		}
		// The SDK pings idle connections every 10s; the server's default policy would
		// answer that with GOAWAY (too_many_pings) and break calls in flight.
		srv := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}))
		ep := &endpoint{lis: lis, srv: srv, acct: int64(3 + i)}
		services.RegisterConsensusServiceServer(ep.srv, consensusServer{n: n, acct: ep.acct})
		services.RegisterCryptoServiceServer(ep.srv, cryptoServer{n: n})
		n.eps = append(n.eps, ep)
		go func() { _ = ep.srv.Serve(lis) }()
	}
	go func() {
		<-ctx.Done()
		n.Close()
	}()
	return n, nil
}

// StartT starts a node for a test and closes it when the test ends.
func StartT(tb testing.TB) *Node { return StartNodesT(tb, 1) }

// StartNodesT starts count node accounts for a test (see StartNodes) and closes them
// when the test ends.
func StartNodesT(tb testing.TB, count int) *Node {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := StartNodes(ctx, count)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); n.Close() })
	return n
}

// Close stops the server; it is idempotent.
func (n *Node) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.closing)
	n.mu.Unlock()
	for _, ep := range n.eps {
		ep.srv.Stop()
	}
}

// Addr is the first node account's host:port.
func (n *Node) Addr() string { return n.eps[0].lis.Addr().String() }

// NodeAccountID is the first node account's id, "0.0.3".
func (n *Node) NodeAccountID() string { return "0.0.3" }

// NodeAccountIDs are the ids of all node accounts, in order: "0.0.3", "0.0.4", ….
func (n *Node) NodeAccountIDs() []string {
	out := make([]string, len(n.eps))
	for i, ep := range n.eps {
		out[i] = fmt.Sprintf("0.0.%d", ep.acct)
	}
	return out
}

// Network is the HEDERA_NETWORK value for the node accounts:
// "127.0.0.1:port=0.0.3[,127.0.0.1:port=0.0.4…]".
func (n *Node) Network() string {
	parts := make([]string, len(n.eps))
	for i, ep := range n.eps {
		parts[i] = fmt.Sprintf("%s=0.0.%d", ep.lis.Addr(), ep.acct)
	}
	return strings.Join(parts, ",")
}

// SetSchedule replaces the periodic fault schedule and restarts its count.
func (n *Node) SetSchedule(s Schedule) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.Lose == 0 {
		s.Lose = FaultDropReplyAfterAccept
	}
	n.schedule, n.calls, n.replies = s, 0, 0
}

// SetNodeBusy makes node account acct ("0.0.4") answer BUSY to every submission
// (busy true) or stop doing so. Other node accounts are not affected.
func (n *Node) SetNodeBusy(acct string, busy bool) {
	var num int64
	if _, err := fmt.Sscanf(acct, "0.0.%d", &num); err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.busyNodes[num] = busy
}

// SetClock replaces the node's clock (validity checks and consensus times).
func (n *Node) SetClock(now func() time.Time) {
	n.mu.Lock()
	n.now = now
	n.mu.Unlock()
}

// FailNext makes the next count submitMessage calls fail with f (queued after any
// faults already pending).
func (n *Node) FailNext(f Fault, count int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for range count {
		n.faults = append(n.faults, f)
	}
}

// PendingFaults is the number of injected faults not yet used.
func (n *Node) PendingFaults() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.faults)
}

// Stats returns the counters so far.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.stats
	st.SubmitsByNode = make(map[string]int, len(n.stats.SubmitsByNode))
	for k, v := range n.stats.SubmitsByNode {
		st.SubmitsByNode[k] = v
	}
	return st
}

// CreateTopic creates a topic directly (without a transaction) and returns its id.
func (n *Node) CreateTopic(memo string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.createTopic(memo)
}

func (n *Node) createTopic(memo string) string {
	num := n.nextTopic
	n.nextTopic++
	n.topics[num] = &topic{memo: memo, hash: make([]byte, sha512.Size384)}
	return fmt.Sprintf("0.0.%d", num)
}

// Messages returns the messages consensus saw on topic ("0.0.N"), in order.
func (n *Node) Messages(topicID string) []Message {
	var shard, realm, num int64
	if _, err := fmt.Sscanf(topicID, "%d.%d.%d", &shard, &realm, &num); err != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.topics[num]
	if t == nil {
		return nil
	}
	out := make([]Message, len(t.msgs))
	copy(out, t.msgs)
	return out
}

// TxIDString formats a protobuf transaction id the way the SDK's TransactionID.String
// does.
func TxIDString(id *services.TransactionID) string {
	a := id.GetAccountID()
	vs := id.GetTransactionValidStart()
	s := fmt.Sprintf("%d.%d.%d@%d.%09d", a.GetShardNum(), a.GetRealmNum(), a.GetAccountNum(), vs.GetSeconds(), vs.GetNanos())
	if id.GetScheduled() {
		s += "?scheduled"
	}
	if id.GetNonce() != 0 {
		s += fmt.Sprintf("/%d", id.GetNonce())
	}
	return s
}
