package hcsfake

import (
	"context"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

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

// nextFault picks the fault for this call under n.mu: a queued one first, then a BUSY
// node, then the schedule.
func (n *Node) nextFault(acct int64) Fault {
	if len(n.faults) > 0 {
		f := n.faults[0]
		n.faults = n.faults[1:]
		return f
	}
	if n.busyNodes[acct] {
		return FaultBusy
	}
	s := n.schedule
	if s.BusyEvery <= 0 && s.LoseReplyEvery <= 0 {
		return 0
	}
	n.calls++
	if s.BusyEvery > 0 && n.calls%s.BusyEvery == 0 {
		return FaultBusy
	}
	n.replies++
	if s.LoseReplyEvery > 0 && n.replies%s.LoseReplyEvery == 0 {
		return s.Lose
	}
	return 0
}

// admit runs the common prechecks under n.mu: fault injection, decoding, validity
// window and duplicates. It returns the body (nil when the call is answered without
// accepting anything), the response to send instead, a gRPC error, and the fault to
// apply to the reply (lose or drop it), if any.
func (n *Node) admit(acct int64, tx *services.Transaction) (*services.TransactionBody, *services.TransactionResponse, error, Fault) {
	n.stats.Submits++
	n.stats.SubmitsByNode[fmt.Sprintf("0.0.%d", acct)]++
	fault := n.nextFault(acct)
	if fault != 0 {
		n.stats.Faults++
	}
	switch fault {
	case FaultBusy:
		n.stats.Busy++
		return nil, precheck(services.ResponseCodeEnum_BUSY), nil, 0
	case FaultUnavailable:
		return nil, nil, status.Error(codes.Unavailable, "hcsfake: injected unavailable"), 0
	case FaultLoseReplyAfterAccept, FaultDropReplyAfterAccept:
		n.stats.Lost++
	}
	body, err := decode(tx)
	if err != nil {
		return nil, precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil, fault
	}
	id := TxIDString(body.GetTransactionID())
	if _, dup := n.records[id]; dup {
		n.stats.Duplicates++
		return nil, precheck(services.ResponseCodeEnum_DUPLICATE_TRANSACTION), nil, fault
	}
	now := n.now()
	vs := body.GetTransactionID().GetTransactionValidStart()
	start := time.Unix(vs.GetSeconds(), int64(vs.GetNanos()))
	valid := time.Duration(body.GetTransactionValidDuration().GetSeconds()) * time.Second
	if start.After(now.Add(10 * time.Second)) {
		return nil, precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_START), nil, fault
	}
	if now.After(start.Add(valid)) {
		n.stats.Expired++
		return nil, precheck(services.ResponseCodeEnum_TRANSACTION_EXPIRED), nil, fault
	}
	return body, nil, nil, fault
}

// deliver sends a call's answer, or loses it as fault says: FaultLoseReplyAfterAccept
// fails the call at once, FaultDropReplyAfterAccept answers nothing until the caller
// gives up or the node closes. It must be called without n.mu.
func (n *Node) deliver(ctx context.Context, resp *services.TransactionResponse, err error, fault Fault) (*services.TransactionResponse, error) {
	switch fault {
	case FaultLoseReplyAfterAccept:
		return nil, status.Error(codes.Unavailable, "hcsfake: reply lost after accept")
	case FaultDropReplyAfterAccept:
		select {
		case <-ctx.Done():
		case <-n.closing:
		}
		return nil, status.Error(codes.Unavailable, "hcsfake: reply dropped after accept")
	}
	return resp, err
}

// consensusServer serves ConsensusService for n.
type consensusServer struct {
	services.UnimplementedConsensusServiceServer
	n    *Node
	acct int64 // the node account this endpoint serves
}

// cryptoServer serves CryptoService (receipts) for n.
type cryptoServer struct {
	services.UnimplementedCryptoServiceServer
	n *Node
}

// SubmitMessage implements ConsensusService.submitMessage.
func (s consensusServer) SubmitMessage(ctx context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	resp, err, fault := s.n.submitMessage(s.acct, tx)
	return s.n.deliver(ctx, resp, err, fault)
}

// CreateTopic implements ConsensusService.createTopic.
func (s consensusServer) CreateTopic(ctx context.Context, tx *services.Transaction) (*services.TransactionResponse, error) {
	resp, err, fault := s.n.createTopicTx(s.acct, tx)
	return s.n.deliver(ctx, resp, err, fault)
}

// GetTransactionReceipts implements CryptoService.getTransactionReceipts.
func (s cryptoServer) GetTransactionReceipts(ctx context.Context, q *services.Query) (*services.Response, error) {
	return s.n.receipts(ctx, q)
}

// submitMessage accepts a message: sequence, running hash, receipt.
// It returns the answer and the fault to apply to it (see deliver).
func (n *Node) submitMessage(acct int64, tx *services.Transaction) (*services.TransactionResponse, error, Fault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	body, resp, err, fault := n.admit(acct, tx)
	if body == nil {
		return resp, err, fault
	}
	sub := body.GetConsensusSubmitMessage()
	if sub == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil, fault
	}
	if len(sub.GetMessage()) == 0 {
		return precheck(services.ResponseCodeEnum_INVALID_TOPIC_MESSAGE), nil, fault
	}
	if len(sub.GetMessage()) > 1024 {
		return precheck(services.ResponseCodeEnum_MESSAGE_SIZE_TOO_LARGE), nil, fault
	}
	t := n.topics[sub.GetTopicID().GetTopicNum()]
	if t == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TOPIC_ID), nil, fault
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
	return precheck(services.ResponseCodeEnum_OK), nil, fault
}

// createTopicTx creates a topic from a transaction.
func (n *Node) createTopicTx(acct int64, tx *services.Transaction) (*services.TransactionResponse, error, Fault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	body, resp, err, fault := n.admit(acct, tx)
	if body == nil {
		return resp, err, fault
	}
	ct := body.GetConsensusCreateTopic()
	if ct == nil {
		return precheck(services.ResponseCodeEnum_INVALID_TRANSACTION_BODY), nil, fault
	}
	id := n.createTopic(ct.GetMemo())
	var num int64
	_, _ = fmt.Sscanf(id, "0.0.%d", &num)
	n.records[TxIDString(body.GetTransactionID())] = &record{receipt: &services.TransactionReceipt{
		Status:  services.ResponseCodeEnum_SUCCESS,
		TopicID: &services.TopicID{TopicNum: num},
	}}
	return precheck(services.ResponseCodeEnum_OK), nil, fault
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
