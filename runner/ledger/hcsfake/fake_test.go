package hcsfake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	"google.golang.org/protobuf/proto"
)

func submitTx(t *testing.T, topic int64, start time.Time, msg string) *services.Transaction {
	t.Helper()
	body := &services.TransactionBody{
		TransactionID: &services.TransactionID{
			AccountID:             &services.AccountID{Account: &services.AccountID_AccountNum{AccountNum: 2}},
			TransactionValidStart: &services.Timestamp{Seconds: start.Unix(), Nanos: int32(start.Nanosecond())},
		},
		TransactionValidDuration: &services.Duration{Seconds: 120},
		Data: &services.TransactionBody_ConsensusSubmitMessage{ConsensusSubmitMessage: &services.ConsensusSubmitMessageTransactionBody{
			TopicID: &services.TopicID{TopicNum: topic}, Message: []byte(msg),
		}},
	}
	bb, _ := proto.Marshal(body)
	st, _ := proto.Marshal(&services.SignedTransaction{BodyBytes: bb, SigMap: &services.SignatureMap{SigPair: []*services.SignaturePair{{PubKeyPrefix: []byte{1}}}}})
	return &services.Transaction{SignedTransactionBytes: st}
}

// submit calls the node as node account 0.0.3's endpoint does.
func submit(ctx context.Context, n *Node, tx *services.Transaction) (*services.TransactionResponse, error) {
	resp, err, fault := n.submitMessage(3, tx)
	return n.deliver(ctx, resp, err, fault)
}

func TestNode(t *testing.T) {
	n := StartT(t)
	ctx := context.Background()
	topic := n.CreateTopic("m")
	now := time.Now()
	tx := submitTx(t, 1001, now, "one")
	code := func(r *services.TransactionResponse, err error) services.ResponseCodeEnum {
		if err != nil {
			return -1
		}
		return r.GetNodeTransactionPrecheckCode()
	}
	if c := code(submit(ctx, n, tx)); c != services.ResponseCodeEnum_OK {
		t.Fatal(c)
	}
	if c := code(submit(ctx, n, tx)); c != services.ResponseCodeEnum_DUPLICATE_TRANSACTION {
		t.Fatal(c)
	}
	if c := code(submit(ctx, n, submitTx(t, 1001, now.Add(-time.Hour), "old"))); c != services.ResponseCodeEnum_TRANSACTION_EXPIRED {
		t.Fatal(c)
	}
	if c := code(submit(ctx, n, submitTx(t, 999, now.Add(time.Millisecond), "x"))); c != services.ResponseCodeEnum_INVALID_TOPIC_ID {
		t.Fatal(c)
	}
	n.FailNext(FaultBusy, 1)
	n.FailNext(FaultUnavailable, 1)
	n.FailNext(FaultLoseReplyAfterAccept, 1)
	two := submitTx(t, 1001, now.Add(time.Microsecond), "two")
	if c := code(submit(ctx, n, two)); c != services.ResponseCodeEnum_BUSY {
		t.Fatal(c)
	}
	if c := code(submit(ctx, n, two)); c != -1 {
		t.Fatal(c)
	}
	if c := code(submit(ctx, n, two)); c != -1 { // accepted, reply lost
		t.Fatal(c)
	}
	msgs := n.Messages(topic)
	if len(msgs) != 2 || string(msgs[1].Contents) != "two" || msgs[1].Sequence != 2 || !msgs[1].ConsensusAt.After(msgs[0].ConsensusAt) {
		t.Fatalf("%+v", msgs)
	}
	q := func(tx *services.Transaction) *services.TransactionGetReceiptResponse {
		var b services.TransactionBody
		var st services.SignedTransaction
		_ = proto.Unmarshal(tx.SignedTransactionBytes, &st)
		_ = proto.Unmarshal(st.BodyBytes, &b)
		r, _ := n.receipts(ctx, &services.Query{Query: &services.Query_TransactionGetReceipt{TransactionGetReceipt: &services.TransactionGetReceiptQuery{TransactionID: b.TransactionID}}})
		return r.GetTransactionGetReceipt()
	}
	if r := q(two); r.Receipt.GetTopicSequenceNumber() != 2 || r.Receipt.GetTopicRunningHashVersion() != 3 || len(r.Receipt.GetTopicRunningHash()) != 48 {
		t.Fatalf("%v", r)
	}
	if r := q(submitTx(t, 1001, now.Add(time.Second), "never")); r.Header.GetNodeTransactionPrecheckCode() != services.ResponseCodeEnum_RECEIPT_NOT_FOUND {
		t.Fatalf("%v", r)
	}
	st := n.Stats()
	if st.Accepted != 2 || st.Duplicates != 1 || st.Faults != 3 || n.PendingFaults() != 0 {
		t.Fatalf("%+v", st)
	}
	if Fault(9).String() == "" || FaultBusy.String() != "busy" || n.Network() != n.Addr()+"=0.0.3" || n.Messages("bad") != nil {
		t.Fatal("accessors")
	}
	n.Close()
	n.Close()
}

// The schedule counts calls across node accounts: every fifth call is BUSY, every
// fourth other reply is lost (accepted, answered with nothing until the caller gives
// up); a BUSY node answers BUSY alone.
func TestScheduleAndNodes(t *testing.T) {
	n := StartNodesT(t, 3)
	if got := n.NodeAccountIDs(); len(got) != 3 || got[2] != "0.0.5" || strings.Count(n.Network(), ",") != 2 {
		t.Fatalf("%v %s", got, n.Network())
	}
	n.CreateTopic("s")
	n.SetSchedule(Schedule{BusyEvery: 5, LoseReplyEvery: 4})
	start := time.Now()
	var codes []string
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		resp, err, fault := n.submitMessage(int64(3+i%3), submitTx(t, 1001, start.Add(time.Duration(i)*time.Microsecond), "m"))
		r, err := n.deliver(ctx, resp, err, fault)
		cancel()
		switch {
		case err != nil:
			codes = append(codes, "lost")
		default:
			codes = append(codes, r.GetNodeTransactionPrecheckCode().String())
		}
	}
	want := "OK OK OK lost BUSY OK OK OK lost BUSY"
	if got := strings.Join(codes, " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	st := n.Stats()
	if st.Accepted != 8 || st.Busy != 2 || st.Lost != 2 || st.SubmitsByNode["0.0.4"] != 3 {
		t.Fatalf("%+v", st)
	}
	n.SetSchedule(Schedule{})
	n.SetNodeBusy("0.0.4", true)
	resp, _, _ := n.submitMessage(4, submitTx(t, 1001, start.Add(time.Millisecond), "x"))
	resp5, _, _ := n.submitMessage(5, submitTx(t, 1001, start.Add(2*time.Millisecond), "y"))
	if resp.GetNodeTransactionPrecheckCode() != services.ResponseCodeEnum_BUSY || resp5.GetNodeTransactionPrecheckCode() != services.ResponseCodeEnum_OK {
		t.Fatalf("%v %v", resp, resp5)
	}
}
