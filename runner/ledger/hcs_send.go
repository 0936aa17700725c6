package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	sdkproto "github.com/hiero-ledger/hiero-sdk-go/v2/proto/sdk"
	"github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
	"google.golang.org/protobuf/proto"
)

// Sending in order with several transactions in flight.
//
// Consensus orders a node's transactions in the order the node took them (a node's
// events form a chain, and each event keeps its transactions in order), but says
// nothing about transactions taken by two different nodes. So HCS sends every
// transaction to one node, the lane, for as long as it answers, and lets the next
// transaction go as soon as the lane's node has taken the previous one (precheck OK),
// without waiting for consensus. Before it sends to another node (the lane's node is
// BUSY or failing) it waits until every transaction still open on the old lane has a
// receipt; on the fake node, where consensus is immediate, that costs one receipt
// query each. An answer that does not come within the submit deadline (a few times the
// node's usual answer time) is settled by one receipt query at that node: a receipt,
// or "known, pending", means the node took it; "not found" means it did not, and the
// same bytes are sent again. A transaction that may have been sent before by someone
// else (a restart, a takeover, a DUPLICATE_TRANSACTION answer, an unsettled attempt) is
// confirmed by its receipt before anything is sent after it.

const (
	// minSubmitDeadline is the shortest wait for a node's answer to a submission.
	minSubmitDeadline = 100 * time.Millisecond
	// submitDeadlineFactor times the usual answer time is how long an answer may take
	// before it is taken for lost.
	submitDeadlineFactor = 10
	// probeTries bounds the receipt queries that settle one unanswered submission.
	probeTries = 4
)

// sendState is what HCS keeps between Sends (guarded by its mu; Sends themselves are
// serialised by HCS.sendMu).
type sendState struct {
	mu       sync.Mutex
	lane     int                // index in HCS.nodes of the node taking transactions
	open     []string           // tx ids the lane's node took, receipt not read yet, in order
	taken    map[string]int     // tx id → node that took it, until its receipt is read
	mine     map[string]bool    // tx ids prepared by this process and not yet settled
	receipts map[string]Receipt // receipts read while sending, for Await
	nodes    []nodeState        // per pinned node
	latency  time.Duration      // moving average of a node's answer time; 0: none yet
}

// nodeState is one node's backoff: it is not sent to before until.
type nodeState struct {
	backoff time.Duration
	until   time.Time
}

func newSendState(nodes int) *sendState {
	return &sendState{taken: map[string]int{}, mine: map[string]bool{}, receipts: map[string]Receipt{}, nodes: make([]nodeState, nodes)}
}

// pick returns the node to send to: the lane's unless it is backing off, else the
// first that is not, else the one free soonest and how long to wait for it.
func (s *sendState) pick(now time.Time) (int, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.nodes[s.lane].until.After(now) {
		return s.lane, 0
	}
	best := 0
	for i, n := range s.nodes {
		if !n.until.After(now) {
			return i, 0
		}
		if n.until.Before(s.nodes[best].until) {
			best = i
		}
	}
	return best, s.nodes[best].until.Sub(now)
}

// healthy records that node i took a transaction or refused it for a reason of the
// transaction's own: its backoff ends.
func (s *sendState) healthy(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[i] = nodeState{}
}

// observe records that a node answered a submission in d (BUSY included): the
// submit deadline follows these answer times.
func (s *sendState) observe(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latency == 0 {
		s.latency = d
	} else {
		s.latency = (7*s.latency + d) / 8
	}
}

// backOff keeps node i out of use for a doubling while (BUSY, no answer, an answer
// that says it did not take the transaction): the other nodes carry on meanwhile.
func (s *sendState) backOff(i int, min, max time.Duration, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.nodes[i].backoff * 2
	if b < min {
		b = min
	}
	if b > max {
		b = max
	}
	s.nodes[i] = nodeState{backoff: b, until: now.Add(b)}
}

// deadline is how long to wait for a node's answer to a submission.
func (s *sendState) deadline(limit time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latency == 0 {
		return limit
	}
	return min(max(submitDeadlineFactor*s.latency, minSubmitDeadline), limit)
}

// took records that node i took txID; it is open on the lane until its receipt is read.
func (s *sendState) took(txID string, i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lane = i
	s.taken[txID] = i
	s.open = append(s.open, txID)
}

// settled records txID's receipt, read while sending, for Await: it is no longer open.
func (s *sendState) settled(txID string, r Receipt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receipts[txID] = r
	s.removeOpen(txID)
}

// removeOpen drops txID from the open list; s.mu must be held.
func (s *sendState) removeOpen(txID string) {
	for i, id := range s.open {
		if id == txID {
			s.open = append(s.open[:i:i], s.open[i+1:]...)
			return
		}
	}
}

// unsure records that txID may have been sent without a node's answer: whoever sends
// it next confirms it by its receipt before anything goes after it.
func (s *sendState) unsure(txID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mine, txID)
}

// forget drops everything kept about txID: its outcome is recorded or decided.
func (s *sendState) forget(txID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.taken, txID)
	delete(s.mine, txID)
	delete(s.receipts, txID)
	s.removeOpen(txID)
}

// Send hands e's prepared transaction to one node and returns once a node has taken
// it in order: nothing sent after it can reach consensus before it. Sends are
// serialised; the publisher calls Send one entry at a time, in ID order. BUSY and
// failing nodes are backed off one by one while the others take the transactions.
// An error means e's outcome is not settled: nothing may be sent after it until
// Lookup decides it.
func (h *HCS) Send(ctx context.Context, e *models.LedgerEntry) (err error) {
	if e.TxID == "" || len(e.TxBytes) == 0 {
		return fmt.Errorf("hcs: entry %d was not prepared", e.ID)
	}
	id, err := hiero.TransactionIdFromString(e.TxID)
	if err != nil {
		return Permanent(fmt.Errorf("hcs: entry %d has a malformed transaction id", e.ID))
	}
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	s := h.send
	defer func() {
		if err != nil {
			s.unsure(e.TxID)
		}
	}()
	s.mu.Lock()
	_, taken := s.taken[e.TxID]
	_, read := s.receipts[e.TxID]
	confirm := !s.mine[e.TxID] // another process, or an earlier run, may have sent it
	s.mu.Unlock()
	if taken || read {
		return nil
	}
	budget := time.Now().Add(h.requestTimeout())
	var last error
	for time.Now().Before(budget) {
		i, wait := s.pick(time.Now())
		if wait > 0 && !sleepCtx(ctx, wait) {
			break
		}
		if err := h.changeLane(ctx, i); err != nil {
			return fmt.Errorf("hcs: entry %d not sent: %w", e.ID, err)
		}
		done, again, err := h.sendTo(ctx, e, id, i, confirm)
		if done {
			return err
		}
		if again {
			confirm = true // it may have reached the node: confirm it once taken
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("%w: %v", ErrOutcomeUnknown, ctx.Err())
	}
	return fmt.Errorf("hcs: entry %d (tx %s) not taken by any node: %w", e.ID, e.TxID, last)
}

// sendTo makes one attempt at node i. done: Send returns err (nil: taken in order);
// otherwise the node is backed off and, when again, the attempt's outcome was not
// settled by the node itself.
func (h *HCS) sendTo(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID, i int, confirm bool) (done, again bool, err error) {
	s := h.send
	start := time.Now()
	serr := h.submitOnce(ctx, e, i)
	var pre hiero.ErrHederaPreCheckStatus
	switch {
	case serr == nil:
		s.observe(time.Since(start))
		s.healthy(i)
		s.took(e.TxID, i)
		if confirm {
			return true, false, h.confirm(ctx, e, id, i)
		}
		return true, false, nil
	case errors.As(serr, &pre):
		s.observe(time.Since(start))
		return h.onPrecheck(ctx, e, id, i, pre.Status, serr)
	}
	if ctx.Err() != nil {
		return true, false, fmt.Errorf("hcs: entry %d: %w: %v", e.ID, ErrOutcomeUnknown, ctx.Err())
	}
	// No answer: a lost reply, a lost request or a failing node. One receipt query at
	// that node tells which.
	switch st, r := h.probe(ctx, id, i); st {
	case receiptFound:
		s.settled(e.TxID, r)
		return true, false, nil
	case receiptPending:
		s.took(e.TxID, i)
		if confirm {
			return true, false, h.confirm(ctx, e, id, i)
		}
		return true, false, nil
	case receiptFailed:
		return true, false, fmt.Errorf("hcs: entry %d (tx %s) reached consensus and failed (%v): %w", e.ID, e.TxID, serr, ErrOutcomeUnknown)
	default:
		s.backOff(i, h.cfg.MinBackoff, h.cfg.MaxBackoff, time.Now())
		return false, true, fmt.Errorf("%w: %v", ErrOutcomeUnknown, serr)
	}
}

// onPrecheck handles a node's answer other than OK.
func (h *HCS) onPrecheck(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID, i int, st hiero.Status, serr error) (done, again bool, err error) {
	switch st {
	case hiero.StatusBusy, hiero.StatusPlatformNotActive, hiero.StatusPlatformTransactionNotCreated, hiero.StatusInvalidNodeAccount:
		h.send.backOff(i, h.cfg.MinBackoff, h.cfg.MaxBackoff, time.Now())
		return false, false, serr
	case hiero.StatusDuplicateTransaction:
		// Sent before — by us, with the answer lost, or by someone else to any node:
		// its receipt decides, and nothing goes after it until then.
		h.send.healthy(i)
		return true, false, h.confirm(ctx, e, id, i)
	}
	h.send.healthy(i)
	// Refused for a reason of its own (expired, …): Lookup decides when a new
	// transaction may be prepared.
	return true, false, fmt.Errorf("hcs: entry %d (tx %s) refused: %w: %w", e.ID, e.TxID, ErrOutcomeUnknown, serr)
}

// confirm waits for e's receipt (asking node i first) and keeps it for Await.
func (h *HCS) confirm(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID, i int) error {
	r, found, err := h.receipt(ctx, e, id, i)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("hcs: entry %d (tx %s) reached consensus and failed: %w", e.ID, e.TxID, ErrOutcomeUnknown)
	}
	h.send.settled(e.TxID, r)
	return nil
}

// changeLane makes node i the lane. Moving to another node first waits for the
// receipts of every transaction still open on the old lane, so that none of them can
// reach consensus after what the new node takes.
func (h *HCS) changeLane(ctx context.Context, i int) error {
	s := h.send
	s.mu.Lock()
	if s.lane == i || len(s.open) == 0 {
		s.lane = i
		s.mu.Unlock()
		return nil
	}
	open, lane := append([]string(nil), s.open...), s.lane
	s.mu.Unlock()
	for _, txID := range open {
		if err := h.closeOpen(ctx, txID, lane); err != nil {
			return fmt.Errorf("moving from node %s: %w", h.nodes[lane], err)
		}
	}
	s.mu.Lock()
	s.lane = i
	s.mu.Unlock()
	return nil
}

// closeOpen reads the receipt of txID, open on node lane, unless its Await has done
// so meanwhile, and keeps it for Await. A transaction that reached consensus and
// failed is closed too: Await and Lookup will say so.
func (h *HCS) closeOpen(ctx context.Context, txID string, lane int) error {
	s := h.send
	s.mu.Lock()
	_, still := s.taken[txID]
	s.mu.Unlock()
	if !still {
		return nil
	}
	id, err := hiero.TransactionIdFromString(txID)
	if err != nil {
		return err
	}
	r, found, err := h.receipt(ctx, &models.LedgerEntry{TxID: txID}, id, lane)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, still := s.taken[txID]; still {
		if found {
			s.receipts[txID] = r
		}
		s.removeOpen(txID)
	}
	return nil
}

// submitOnce sends e's bytes for node i to node i alone, once, waiting at most the
// submit deadline for the answer. The SDK's own retries are off: a BUSY node is backed
// off here while the others carry on, and an unanswered submission is settled by a
// receipt query instead of the SDK resending it.
func (h *HCS) submitOnce(ctx context.Context, e *models.LedgerEntry, i int) error {
	raw, err := forNode(e.TxBytes, h.nodes[i])
	if err != nil {
		return Permanent(fmt.Errorf("hcs: stored transaction of entry %d: %w", e.ID, err))
	}
	deadline := h.send.deadline(h.submitTimeout())
	return h.call(ctx, "submit", func() error {
		txi, err := hiero.TransactionFromBytes(raw)
		if err != nil {
			return fmt.Errorf("hcs: stored transaction of entry %d: %w", e.ID, err)
		}
		var tx *hiero.Transaction[*hiero.TopicMessageSubmitTransaction]
		switch t := txi.(type) {
		case hiero.TopicMessageSubmitTransaction:
			tx = t.Transaction
		case *hiero.TopicMessageSubmitTransaction:
			tx = t.Transaction
		default:
			return Permanent(fmt.Errorf("hcs: stored transaction of entry %d is a %T", e.ID, txi))
		}
		tx.SetMaxRetry(1)
		tx.SetMinBackoff(time.Millisecond) // the SDK sleeps this long after a BUSY
		tx.SetMaxBackoff(time.Millisecond)
		tx.SetGrpcDeadline(&deadline)
		_, err = tx.Execute(h.client) // precheck only; the receipt is Await's
		return err
	})
}

// forNode returns the transaction list in raw reduced to the copy signed for node:
// the same transaction id and signatures, sent to that node alone.
func forNode(raw []byte, node hiero.AccountID) ([]byte, error) {
	var list sdkproto.TransactionList
	if err := proto.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	for _, tx := range list.GetTransactionList() {
		var st services.SignedTransaction
		if err := proto.Unmarshal(tx.GetSignedTransactionBytes(), &st); err != nil {
			return nil, err
		}
		var body services.TransactionBody
		if err := proto.Unmarshal(st.GetBodyBytes(), &body); err != nil {
			return nil, err
		}
		n := body.GetNodeAccountID()
		if n.GetShardNum() == int64(node.Shard) && n.GetRealmNum() == int64(node.Realm) && n.GetAccountNum() == int64(node.Account) {
			return proto.Marshal(&sdkproto.TransactionList{TransactionList: []*services.Transaction{tx}})
		}
	}
	return nil, fmt.Errorf("no copy for node %s", node)
}

// Outcomes of one receipt query.
type receiptState int

const (
	receiptUnsettled receiptState = iota // no usable answer
	receiptFound                         // reached consensus: SUCCESS
	receiptPending                       // the node has it; no consensus yet
	receiptNotFound                      // the node does not know it
	receiptFailed                        // reached consensus with a failure status
)

// probe settles an unanswered submission at node i with single receipt queries (a
// few, a moment apart, when the node gives no usable answer).
func (h *HCS) probe(ctx context.Context, id hiero.TransactionID, i int) (receiptState, Receipt) {
	pause := 10 * time.Millisecond
	for range probeTries {
		if st, r := h.receiptOnce(ctx, id, i); st != receiptUnsettled {
			return st, r
		}
		if !sleepCtx(ctx, pause) {
			break
		}
		pause *= 2
	}
	return receiptUnsettled, Receipt{}
}

// receiptOnce asks node i once for id's receipt.
func (h *HCS) receiptOnce(ctx context.Context, id hiero.TransactionID, i int) (receiptState, Receipt) {
	deadline := h.send.deadline(h.submitTimeout())
	var rc hiero.TransactionReceipt
	var qerr error
	err := h.call(ctx, "receipt", func() error {
		q := hiero.NewTransactionReceiptQuery().SetTransactionID(id).SetNodeAccountIDs([]hiero.AccountID{h.nodes[i]})
		q.SetMaxRetry(1)
		q.SetMinBackoff(time.Millisecond)
		q.SetMaxBackoff(time.Millisecond)
		q.SetGrpcDeadline(&deadline)
		rc, qerr = q.Execute(h.client)
		return nil
	})
	var pre hiero.ErrHederaPreCheckStatus
	switch {
	case err != nil:
		return receiptUnsettled, Receipt{}
	case qerr == nil && rc.Status == hiero.StatusSuccess:
		return receiptFound, h.toReceipt(rc, id.String())
	case qerr == nil && notFinal(rc.Status):
		return receiptUnsettled, Receipt{} // the SDK returns other errors as an empty receipt
	case qerr == nil:
		return receiptFailed, Receipt{}
	case !errors.As(qerr, &pre):
		return receiptUnsettled, Receipt{}
	case pre.Status == hiero.StatusReceiptNotFound:
		return receiptNotFound, Receipt{}
	case pre.Status == hiero.StatusUnknown:
		return receiptPending, Receipt{}
	}
	return receiptUnsettled, Receipt{}
}

// toReceipt is a SUCCESS receipt as the publisher records it.
func (h *HCS) toReceipt(rc hiero.TransactionReceipt, txID string) Receipt {
	return Receipt{Sequence: int64(rc.TopicSequenceNumber), RunningHash: rc.TopicRunningHash, ConsensusAt: h.now().UTC(), TxID: txID}
}

// Await returns the receipt of an entry Send handed over, waiting for consensus (the
// receipt attempts and backoff of the configuration). It may be called for several
// entries at once. An error means the outcome is not settled yet: ask Lookup.
func (h *HCS) Await(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	s := h.send
	s.mu.Lock()
	r, ok := s.receipts[e.TxID]
	node, sent := s.taken[e.TxID]
	s.mu.Unlock()
	if ok {
		s.forget(e.TxID)
		return r, nil
	}
	id, err := hiero.TransactionIdFromString(e.TxID)
	if err != nil {
		return Receipt{}, Permanent(fmt.Errorf("hcs: entry %d has a malformed transaction id", e.ID))
	}
	if !sent {
		node = 0
	}
	r, found, err := h.receipt(ctx, e, id, node)
	switch {
	case err != nil:
		return Receipt{}, err
	case !found:
		return Receipt{}, fmt.Errorf("hcs: entry %d (tx %s) reached consensus and failed: %w", e.ID, e.TxID, ErrOutcomeUnknown)
	}
	s.forget(e.TxID)
	return r, nil
}

// receipt waits for id's receipt, asking node first and the other pinned nodes after
// it: (receipt, true) for SUCCESS, (_, false) when it reached consensus and failed, an
// error when there is no receipt after the configured attempts.
func (h *HCS) receipt(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID, node int) (Receipt, bool, error) {
	nodes := append([]hiero.AccountID{h.nodes[node]}, h.nodes[:node]...)
	nodes = append(nodes, h.nodes[node+1:]...)
	rc, qerr, err := h.queryReceipt(ctx, id, nodes)
	if err != nil {
		return Receipt{}, false, err
	}
	switch {
	case qerr == nil && rc.Status == hiero.StatusSuccess:
		return h.toReceipt(rc, e.TxID), true, nil
	case qerr == nil && notFinal(rc.Status):
		return Receipt{}, false, fmt.Errorf("hcs: no receipt of %s (%s): %w", e.TxID, rc.Status, ErrOutcomeUnknown)
	case qerr == nil:
		return Receipt{}, false, nil
	}
	return Receipt{}, false, fmt.Errorf("hcs: receipt of %s: %w: %v", e.TxID, ErrOutcomeUnknown, qerr)
}

// notFinal reports whether a receipt status says nothing about consensus yet. The
// SDK's TransactionReceiptQuery.Execute returns errors other than precheck statuses
// (node unhealthy, transport) as an empty receipt (status OK) and no error.
func notFinal(st hiero.Status) bool {
	switch st {
	case hiero.StatusOk, hiero.StatusUnknown, hiero.StatusReceiptNotFound, hiero.StatusBusy, hiero.StatusPlatformNotActive, hiero.StatusPlatformTransactionNotCreated:
		return true
	}
	return false
}

// sleepCtx waits d unless ctx ends first; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
