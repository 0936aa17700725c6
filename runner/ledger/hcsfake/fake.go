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
// and injects faults (BUSY, unavailable, a reply lost after the message was accepted).
//
// It does not check signatures or charge fees, and its running hash uses the
// version-3 fields in plain big-endian concatenation, not the nodes' Java framing, so
// it is not byte-identical with the network's.
package hcsfake

import (
	"context"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
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
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case FaultBusy:
		return "busy"
	case FaultUnavailable:
		return "unavailable"
	case FaultLoseReplyAfterAccept:
		return "lose-reply-after-accept"
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
	Receipts   int // receipt queries
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

// Node is a running fake consensus node.
type Node struct {
	lis    net.Listener
	srv    *grpc.Server
	nodeID *services.AccountID

	mu        sync.Mutex
	now       func() time.Time
	lastCons  time.Time
	topics    map[int64]*topic
	nextTopic int64
	records   map[string]*record
	faults    []Fault
	stats     Stats
	closed    bool
}

// Start listens on 127.0.0.1:0 and serves until Close or until ctx ends.
func Start(ctx context.Context) (*Node, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hcsfake: listen: %w", err)
	}
	n := &Node{
		lis: lis, srv: grpc.NewServer(), nodeID: &services.AccountID{Account: &services.AccountID_AccountNum{AccountNum: 3}},
		now: time.Now, topics: map[int64]*topic{}, nextTopic: 1001, records: map[string]*record{},
	}
	services.RegisterConsensusServiceServer(n.srv, consensusServer{n: n})
	services.RegisterCryptoServiceServer(n.srv, cryptoServer{n: n})
	go func() { _ = n.srv.Serve(lis) }()
	go func() {
		<-ctx.Done()
		n.Close()
	}()
	return n, nil
}

// StartT starts a node for a test and closes it when the test ends.
func StartT(tb testing.TB) *Node {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Start(ctx)
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
	n.mu.Unlock()
	n.srv.Stop()
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return n.lis.Addr().String() }

// NodeAccountID is the node's account id, "0.0.3".
func (n *Node) NodeAccountID() string { return "0.0.3" }

// Network is the HEDERA_NETWORK value for this node: "127.0.0.1:port=0.0.3".
func (n *Node) Network() string { return n.Addr() + "=" + n.NodeAccountID() }

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
	return n.stats
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

// decode extracts the body of a transaction in either encoding.
func decode(tx *services.Transaction) (*services.TransactionBody, error) {
	bodyBytes := tx.GetBodyBytes() //nolint:staticcheck // legacy encoding still accepted
	if len(tx.GetSignedTransactionBytes()) > 0 {
		var st services.SignedTransaction
		if err := proto.Unmarshal(tx.GetSignedTransactionBytes(), &st); err != nil {
			return nil, err
		}
		if len(st.GetSigMap().GetSigPair()) == 0 {
			return nil, errors.New("unsigned")
		}
		bodyBytes = st.GetBodyBytes()
	}
	var body services.TransactionBody
	if err := proto.Unmarshal(bodyBytes, &body); err != nil {
		return nil, err
	}
	if body.GetTransactionID() == nil {
		return nil, errors.New("no transaction id")
	}
	return &body, nil
}

func precheck(code services.ResponseCodeEnum) *services.TransactionResponse {
	return &services.TransactionResponse{NodeTransactionPrecheckCode: code}
}

// admit runs the common prechecks under n.mu: fault injection, decoding, validity
// window and duplicates. It returns the body, a response to send instead (when not
// nil), a gRPC error, and whether the reply is to be lost after acceptance.
func (n *Node) admit(tx *services.Transaction) (*services.TransactionBody, *services.TransactionResponse, error, bool) {
	n.stats.Submits++
	var fault Fault
	if len(n.faults) > 0 {
		fault, n.faults = n.faults[0], n.faults[1:]
		n.stats.Faults++
	}
	switch fault {
	case FaultBusy:
		return nil, precheck(services.ResponseCodeEnum_BUSY), nil, false
	case FaultUnavailable:
		return nil, nil, status.Error(codes.Unavailable, "hcsfake: injected unavailable"), false
	}
	body, err := decode(tx)
	if err != nil {
		return nil, precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil, false
	}
	id := TxIDString(body.GetTransactionID())
	if _, dup := n.records[id]; dup {
		n.stats.Duplicates++
		return nil, precheck(services.ResponseCodeEnum_DUPLICATE_TRANSACTION), nil, false
	}
	now := n.now()
	vs := body.GetTransactionID().GetTransactionValidStart()
	start := time.Unix(vs.GetSeconds(), int64(vs.GetNanos()))
	valid := time.Duration(body.GetTransactionValidDuration().GetSeconds()) * time.Second
	if start.After(now.Add(10 * time.Second)) {
		return nil, precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_START), nil, false
	}
	if now.After(start.Add(valid)) {
		n.stats.Expired++
		return nil, precheck(services.ResponseCodeEnum_TRANSACTION_EXPIRED), nil, false
	}
	return body, nil, nil, fault == FaultLoseReplyAfterAccept
}

// reply finishes an accepted transaction's call, losing the reply when asked to.
func reply(lose bool) (*services.TransactionResponse, error) {
	if lose {
		return nil, status.Error(codes.Unavailable, "hcsfake: reply lost after accept")
	}
	return precheck(services.ResponseCodeEnum_OK), nil
}

// consensusServer serves ConsensusService for n.
type consensusServer struct {
	services.UnimplementedConsensusServiceServer
	n *Node
}

// cryptoServer serves CryptoService (receipts) for n.
type cryptoServer struct {
	services.UnimplementedCryptoServiceServer
	n *Node
}

// SubmitMessage implements ConsensusService.submitMessage.
func (s consensusServer) SubmitMessage(ctx context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	return s.n.submitMessage(ctx, tx)
}

// CreateTopic implements ConsensusService.createTopic.
func (s consensusServer) CreateTopic(ctx context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	return s.n.createTopicTx(ctx, tx)
}

// GetTransactionReceipts implements CryptoService.getTransactionReceipts.
func (s cryptoServer) GetTransactionReceipts(ctx context.Context, q *services.Query) (*services.Response, error) {
	return s.n.receipts(ctx, q)
}

// submitMessage accepts a message: sequence, running hash, receipt.
func (n *Node) submitMessage(_ context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	body, resp, err, lose := n.admit(tx)
	if body == nil {
		return resp, err
	}
	sub := body.GetConsensusSubmitMessage()
	if sub == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil
	}
	if len(sub.GetMessage()) == 0 {
		return precheck(services.ResponseCodeEnum_INVALID_TOPIC_MESSAGE), nil
	}
	if len(sub.GetMessage()) > 1024 {
		return precheck(services.ResponseCodeEnum_MESSAGE_SIZE_TOO_LARGE), nil
	}
	t := n.topics[sub.GetTopicID().GetTopicNum()]
	if t == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TOPIC_ID), nil
	}
	at := n.consensusTime()
	t.seq++
	t.hash = runningHash(t.hash, body.GetTransactionID().GetAccountID(), sub.GetTopicID(), at, t.seq, sub.GetMessage())
	id := TxIDString(body.GetTransactionID())
	t.msgs = append(t.msgs, Message{
		Topic: fmt.Sprintf("0.0.%d", sub.GetTopicID().GetTopicNum()), Sequence: t.seq,
		RunningHash: append([]byte(nil), t.hash...), ConsensusAt: at, TxID: id,
		Contents: append([]byte(nil), sub.GetMessage()...),
	})
	n.records[id] = &record{receipt: &services.TransactionReceipt{
		Status: services.ResponseCodeEnum_SUCCESS, TopicSequenceNumber: t.seq,
		TopicRunningHash: append([]byte(nil), t.hash...), TopicRunningHashVersion: 3,
	}}
	n.stats.Accepted++
	return reply(lose)
}

// createTopicTx creates a topic from a transaction.
func (n *Node) createTopicTx(_ context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	body, resp, err, lose := n.admit(tx)
	if body == nil {
		return resp, err
	}
	ct := body.GetConsensusCreateTopic()
	if ct == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil
	}
	id := n.createTopic(ct.GetMemo())
	var num int64
	_, _ = fmt.Sscanf(id, "0.0.%d", &num)
	n.records[TxIDString(body.GetTransactionID())] = &record{receipt: &services.TransactionReceipt{
		Status:  services.ResponseCodeEnum_SUCCESS,
		TopicID: &services.TopicID{TopicNum: num},
	}}
	return reply(lose)
}

// receipts answers a receipt query: SUCCESS with the topic fields for a known id,
// RECEIPT_NOT_FOUND otherwise.
func (n *Node) receipts(_ context.Context, q *services.Query) (*services.Response, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stats.Receipts++
	rq := q.GetTransactionGetReceipt()
	out := &services.TransactionGetReceiptResponse{Header: &services.ResponseHeader{NodeTransactionPrecheckCode: services.ResponseCodeEnum_OK}}
	if rec, ok := n.records[TxIDString(rq.GetTransactionID())]; ok {
		out.Receipt = proto.Clone(rec.receipt).(*services.TransactionReceipt)
	} else {
		out.Header.NodeTransactionPrecheckCode = services.ResponseCodeEnum_RECEIPT_NOT_FOUND
		out.Receipt = &services.TransactionReceipt{Status: services.ResponseCodeEnum_UNKNOWN}
	}
	return &services.Response{Response: &services.Response_TransactionGetReceipt{TransactionGetReceipt: out}}, nil
}

// consensusTime is the node's clock, strictly increasing.
func (n *Node) consensusTime() time.Time {
	at := n.now().UTC()
	if !at.After(n.lastCons) {
		at = n.lastCons.Add(time.Nanosecond)
	}
	n.lastCons = at
	return at
}

// runningHash is the version-3 running hash over plain big-endian fields (see the
// package documentation for how it differs from the network's).
func runningHash(prev []byte, payer *services.AccountID, t *services.TopicID, at time.Time, seq uint64, msg []byte) []byte {
	h := sha512.New384()
	h.Write(prev)
	var b [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(3)
	put(uint64(payer.GetShardNum()))
	put(uint64(payer.GetRealmNum()))
	put(uint64(payer.GetAccountNum()))
	put(uint64(t.GetShardNum()))
	put(uint64(t.GetRealmNum()))
	put(uint64(t.GetTopicNum()))
	put(uint64(at.Unix()))
	binary.BigEndian.PutUint32(b[:4], uint32(at.Nanosecond()))
	h.Write(b[:4])
	put(seq)
	m := sha512.Sum384(msg)
	h.Write(m[:])
	return h.Sum(nil)
}
