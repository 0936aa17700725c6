package ledger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
)

// HCS posts ledger entries as messages on a Hedera Consensus Service topic, following
// the exactly-once protocol of the package documentation. It is a Pipeline: Send lets
// a transaction go as soon as a node has taken it in order, Await reads its receipt
// (see hcs_send.go for how order survives BUSY nodes and lost replies). Every SDK call
// runs in a goroutine that recovers panics (the SDK has been seen to divide by zero)
// and is abandoned, not killed, when ctx ends: abandoning is safe because the prepared
// bytes carry a fixed transaction id that the network executes at most once.
type HCS struct {
	cfg      HCSConfig
	client   *hiero.Client
	operator hiero.AccountID
	topic    *hiero.TopicID
	nodes    []hiero.AccountID
	now      func() time.Time
	http     *http.Client

	mu        sync.Mutex
	lastStart time.Time // valid starts handed out by this process are strictly increasing

	sendMu sync.Mutex // one Send at a time: the order of Sends is the order on the topic
	send   *sendState
}

// Defaults for HCSConfig's tuning fields.
const (
	DefaultValidDuration = 120 * time.Second
	DefaultStartSkew     = 5 * time.Second
	DefaultSubmitTimeout = 3 * time.Second
	// DefaultNodeBackoff is how long the SDK itself shuns a node after a transport
	// error. It is short because HCS keeps its own per-node backoff; a long one would
	// also hold up the receipt query that settles a lost reply at that node.
	DefaultNodeBackoff = 50 * time.Millisecond
	// ReceiptTTL is how long a node keeps a receipt after consensus.
	ReceiptTTL = 180 * time.Second
	// consensusGrace covers the time between the end of validity and consensus.
	consensusGrace = 10 * time.Second
)

// NewHCS builds the HCS ledger: a client for cfg.Network with the operator set and
// transaction id regeneration off, and the node ids every transaction will name. For
// the public networks the SDK reads the address book from a mirror node here.
func NewHCS(cfg HCSConfig) (_ *HCS, err error) {
	defer recoverInto(&err, "create client")
	if !cfg.OperatorKey.IsSet() {
		return nil, errors.New("hcs: no operator key")
	}
	op, err := hiero.AccountIDFromString(cfg.OperatorID)
	if err != nil {
		return nil, fmt.Errorf("hcs: operator id %q: %w", cfg.OperatorID, err)
	}
	h := &HCS{cfg: cfg, operator: op, now: time.Now, http: &http.Client{Timeout: 15 * time.Second}}
	if cfg.TopicID != "" {
		t, err := hiero.TopicIDFromString(cfg.TopicID)
		if err != nil {
			return nil, fmt.Errorf("hcs: topic id %q: %w", cfg.TopicID, err)
		}
		h.topic = &t
	}
	if h.cfg, err = withDefaults(h.cfg); err != nil {
		return nil, err
	}
	nodes, err := parseNetwork(cfg.Network)
	if err != nil {
		return nil, fmt.Errorf("hcs: network: %w", err)
	}
	var client *hiero.Client
	if nodes == nil {
		client, err = hiero.ClientForName(cfg.Network)
	} else {
		client, err = hiero.ClientForNetworkV2(nodes)
	}
	if err != nil {
		return nil, fmt.Errorf("hcs: client for %s: %w", cfg.Network, err)
	}
	client.SetOperator(op, *cfg.OperatorKey.key)
	client.SetDefaultRegenerateTransactionIDs(false)
	client.SetMinBackoff(0)
	client.SetMaxBackoff(h.cfg.MaxBackoff)
	client.SetMinBackoff(h.cfg.MinBackoff)
	if cfg.GRPCDeadline > 0 {
		client.SetGrpcDeadline(cfg.GRPCDeadline)
	}
	if cfg.RequestTimeout > 0 {
		client.SetRequestTimeout(cfg.RequestTimeout)
	}
	client.SetNodeMinBackoff(h.cfg.NodeBackoff)
	client.SetNodeMaxBackoff(h.cfg.NodeBackoff)
	client.SetMinNodeReadmitTime(h.cfg.NodeBackoff)
	client.SetMaxNodeReadmitTime(h.cfg.NodeBackoff)
	h.client = client
	h.nodes = pinNodes(client.GetNetwork(), h.cfg.MaxNodes)
	if len(h.nodes) == 0 {
		_ = client.Close()
		return nil, errors.New("hcs: the network has no nodes")
	}
	h.send = newSendState(len(h.nodes))
	return h, nil
}

// withDefaults fills cfg's unset durations and counts with their defaults and
// refuses a ValidDuration the network would refuse.
func withDefaults(cfg HCSConfig) (HCSConfig, error) {
	if cfg.ValidDuration <= 0 {
		cfg.ValidDuration = DefaultValidDuration
	}
	if cfg.ValidDuration > 180*time.Second {
		return cfg, errors.New("hcs: ValidDuration is at most 180s")
	}
	if cfg.StartSkew <= 0 {
		cfg.StartSkew = DefaultStartSkew
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = 3
	}
	if cfg.ReceiptAttempts <= 0 {
		cfg.ReceiptAttempts = 5
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(8*time.Second, cfg.MinBackoff)
	}
	if cfg.SubmitTimeout <= 0 {
		cfg.SubmitTimeout = DefaultSubmitTimeout
	}
	if cfg.NodeBackoff <= 0 {
		cfg.NodeBackoff = DefaultNodeBackoff
	}
	return cfg, nil
}

// Name returns "hcs".
func (h *HCS) Name() string { return "hcs" }

// Close releases the client's connections.
func (h *HCS) Close() error { return h.client.Close() }

// SetClock replaces the clock used for valid starts and expiry decisions (tests).
func (h *HCS) SetClock(now func() time.Time) { h.now = now }

// Nodes returns the node account ids pinned on every transaction.
func (h *HCS) Nodes() []string {
	out := make([]string, len(h.nodes))
	for i, n := range h.nodes {
		out[i] = n.String()
	}
	return out
}

func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("hcs: %s: the SDK panicked: %v", what, r)
	}
}

// call runs fn (SDK work) in a goroutine, turning a panic into an error, and stops
// waiting when ctx ends.
func (h *HCS) call(ctx context.Context, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer recoverInto(&err, what)
		err = fn()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("hcs: %s: %w: %w", what, ErrOutcomeUnknown, ctx.Err())
	}
}

// nextValidStart returns now minus the skew allowance, strictly after the last one
// this process used, so that two entries never share a transaction id.
func (h *HCS) nextValidStart() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	vs := h.now().UTC().Add(-h.cfg.StartSkew).Truncate(time.Microsecond)
	if !vs.After(h.lastStart) {
		vs = h.lastStart.Add(time.Microsecond)
	}
	h.lastStart = vs
	return vs
}

// Prepare freezes a TopicMessageSubmitTransaction for e.Message with an explicit
// transaction id (operator + valid start), the pinned node ids, id regeneration off
// and one chunk at most, signs it with the operator key (and the submit key if set)
// once, and stores its id and bytes in e. The caller must save e before Submit.
func (h *HCS) Prepare(ctx context.Context, e *models.LedgerEntry) error {
	if h.topic == nil {
		return errors.New("hcs: no topic configured (" + EnvTopicID + ")")
	}
	if len(e.Message) == 0 || len(e.Message) > MaxMessageBytes {
		return Permanent(fmt.Errorf("hcs: entry %d message is %d bytes; it must be 1 to %d", e.ID, len(e.Message), MaxMessageBytes))
	}
	txID := hiero.NewTransactionIDWithValidStart(h.operator, h.nextValidStart())
	var id string
	var raw []byte
	err := h.call(ctx, "prepare", func() error {
		tx := hiero.NewTopicMessageSubmitTransaction().
			SetTopicID(*h.topic).
			SetMessage(e.Message).
			SetMaxChunks(1).
			SetTransactionID(txID).
			SetNodeAccountIDs(h.nodes).
			SetTransactionValidDuration(h.cfg.ValidDuration).
			SetRegenerateTransactionID(false)
		frozen, err := tx.FreezeWith(h.client)
		if err != nil {
			return fmt.Errorf("hcs: freeze: %w", err)
		}
		frozen.Sign(*h.cfg.OperatorKey.key)
		if h.cfg.SubmitKey.IsSet() {
			frozen.Sign(*h.cfg.SubmitKey.key)
		}
		b, err := frozen.ToBytes()
		if err != nil {
			return fmt.Errorf("hcs: serialise: %w", err)
		}
		id, raw = frozen.GetTransactionID().String(), b
		return nil
	})
	if err != nil {
		return err
	}
	e.TxID, e.TxBytes = id, raw
	h.send.mu.Lock()
	h.send.mine[id] = true // nobody else can have sent it: Send need not confirm it
	h.send.mu.Unlock()
	return nil
}

// submitTimeout is the longest wait for a node's answer to one submission.
func (h *HCS) submitTimeout() time.Duration {
	if h.cfg.GRPCDeadline > 0 {
		return min(h.cfg.SubmitTimeout, h.cfg.GRPCDeadline)
	}
	return h.cfg.SubmitTimeout
}

// requestTimeout bounds one Send across all its attempts.
func (h *HCS) requestTimeout() time.Duration {
	if h.cfg.RequestTimeout > 0 {
		return h.cfg.RequestTimeout
	}
	return 2 * time.Minute
}

// Submit sends the bytes Prepare stored, unchanged, and waits for their receipt:
// Send, then Await. Whatever happens on the way — BUSY, DUPLICATE_TRANSACTION (an
// earlier send got through), a lost reply, a timeout — the answer comes from the
// receipt of the same transaction id. An error means the outcome is still unknown:
// call Lookup later.
func (h *HCS) Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	if err := h.Send(ctx, e); err != nil {
		return Receipt{}, err
	}
	return h.Await(ctx, e)
}

// Lookup asks for the receipt of e's transaction id. Found and SUCCESS: the receipt
// (ConsensusAt is the time the receipt was read, an upper bound within seconds of
// consensus — a receipt carries no timestamp; the exact one is on the mirror node).
// A receipt with a failure status means the id is spent without a message: not found.
// No receipt: undecided (an error) until the validity window has passed; after it,
// not found — within ReceiptTTL from the node's answer, later from the mirror node.
func (h *HCS) Lookup(ctx context.Context, e *models.LedgerEntry) (Receipt, bool, error) {
	if e.TxID == "" {
		return Receipt{}, false, nil // never prepared, so never sent
	}
	id, err := hiero.TransactionIdFromString(e.TxID)
	if err != nil || id.ValidStart == nil {
		return Receipt{}, false, Permanent(fmt.Errorf("hcs: entry %d has a malformed transaction id", e.ID))
	}
	r, found, err := h.lookup(ctx, e, id)
	if err == nil {
		h.send.forget(e.TxID) // decided: nothing kept for Send or Await is needed
	}
	return r, found, err
}

// lookup is Lookup once the transaction id is read.
func (h *HCS) lookup(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID) (Receipt, bool, error) {
	rc, qerr, err := h.queryReceipt(ctx, id, h.nodes)
	if err != nil {
		return Receipt{}, false, err
	}
	if qerr == nil {
		if rc.Status == hiero.StatusSuccess {
			return h.toReceipt(rc, e.TxID), true, nil
		}
		switch rc.Status {
		case hiero.StatusUnknown, hiero.StatusReceiptNotFound, hiero.StatusBusy, hiero.StatusOk:
			// not handled yet: fall through to the window logic
		default:
			return Receipt{}, false, nil // reached consensus and failed: the id is spent
		}
	} else {
		var pre hiero.ErrHederaPreCheckStatus
		if !errors.As(qerr, &pre) || (pre.Status != hiero.StatusReceiptNotFound && pre.Status != hiero.StatusUnknown) {
			return Receipt{}, false, fmt.Errorf("hcs: receipt of %s: %w: %v", e.TxID, ErrOutcomeUnknown, qerr)
		}
	}
	expires := id.ValidStart.Add(h.cfg.ValidDuration)
	now := h.now()
	if now.Before(expires.Add(consensusGrace)) {
		return Receipt{}, false, fmt.Errorf("hcs: %s has no receipt yet and may still reach consensus until %s: %w",
			e.TxID, expires.UTC().Format(time.RFC3339), ErrOutcomeUnknown)
	}
	if now.Before(expires.Add(ReceiptTTL - consensusGrace)) {
		return Receipt{}, false, nil // a receipt would still be kept: there is none
	}
	if h.cfg.MirrorURL == "" {
		return Receipt{}, false, nil // custom network without a mirror: receipts are the record
	}
	return h.mirrorLookup(ctx, e, id)
}

// queryReceipt asks nodes for id's receipt until it is final or the configured
// attempts are spent. err is set when the SDK could not be asked at all; qerr is the
// query's own error.
func (h *HCS) queryReceipt(ctx context.Context, id hiero.TransactionID, nodes []hiero.AccountID) (hiero.TransactionReceipt, error, error) {
	var rc hiero.TransactionReceipt
	var qerr error
	err := h.call(ctx, "receipt", func() error {
		q := hiero.NewTransactionReceiptQuery().
			SetTransactionID(id).
			SetNodeAccountIDs(nodes).
			SetMaxRetry(h.cfg.ReceiptAttempts)
		if h.cfg.MinBackoff <= 8*time.Second {
			q.SetMinBackoff(h.cfg.MinBackoff).SetMaxBackoff(h.cfg.MaxBackoff)
		} else {
			q.SetMaxBackoff(h.cfg.MaxBackoff).SetMinBackoff(h.cfg.MinBackoff)
		}
		rc, qerr = q.Execute(h.client)
		return nil
	})
	if err != nil {
		// call gave up waiting (ctx ended): the abandoned query may still write rc and
		// qerr, so they are not read.
		return hiero.TransactionReceipt{}, nil, err
	}
	return rc, qerr, nil
}

// mirrorLookup resolves a transaction whose receipt has expired from the mirror node.
func (h *HCS) mirrorLookup(ctx context.Context, e *models.LedgerEntry, id hiero.TransactionID) (Receipt, bool, error) {
	vs := id.ValidStart.UTC()
	mid := fmt.Sprintf("%s-%d-%09d", id.AccountID.String(), vs.Unix(), vs.Nanosecond())
	var tx struct {
		Transactions []struct {
			ConsensusTimestamp string `json:"consensus_timestamp"`
			Result             string `json:"result"`
			EntityID           string `json:"entity_id"`
		} `json:"transactions"`
	}
	status, err := h.getJSON(ctx, "/api/v1/transactions/"+url.PathEscape(mid), &tx)
	if err != nil {
		return Receipt{}, false, err
	}
	if status == http.StatusNotFound || len(tx.Transactions) == 0 {
		return Receipt{}, false, nil
	}
	for _, t := range tx.Transactions {
		if t.Result != "SUCCESS" {
			continue
		}
		var msgs struct {
			Messages []struct {
				ConsensusTimestamp string `json:"consensus_timestamp"`
				RunningHash        string `json:"running_hash"`
				SequenceNumber     int64  `json:"sequence_number"`
			} `json:"messages"`
		}
		topic := t.EntityID
		if topic == "" && h.topic != nil {
			topic = h.topic.String()
		}
		path := "/api/v1/topics/" + url.PathEscape(topic) + "/messages?timestamp=" + url.QueryEscape(t.ConsensusTimestamp)
		if _, err := h.getJSON(ctx, path, &msgs); err != nil {
			return Receipt{}, false, err
		}
		if len(msgs.Messages) == 0 {
			return Receipt{}, false, fmt.Errorf("hcs: mirror has %s but not its message yet: %w", e.TxID, ErrOutcomeUnknown)
		}
		m := msgs.Messages[0]
		rh, err := base64.StdEncoding.DecodeString(m.RunningHash)
		if err != nil {
			return Receipt{}, false, fmt.Errorf("hcs: mirror running hash: %w", err)
		}
		return Receipt{Sequence: m.SequenceNumber, RunningHash: rh, ConsensusAt: parseMirrorTime(m.ConsensusTimestamp), TxID: e.TxID}, true, nil
	}
	return Receipt{}, false, nil // reached consensus with a failure status
}

func (h *HCS) getJSON(ctx context.Context, path string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.cfg.MirrorURL+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("hcs: mirror node: %w: %v", ErrOutcomeUnknown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return resp.StatusCode, nil
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("hcs: mirror node answered %s: %w", resp.Status, ErrOutcomeUnknown)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("hcs: mirror node reply: %w", err)
	}
	return resp.StatusCode, nil
}

// parseMirrorTime reads "seconds.nanoseconds".
func parseMirrorTime(s string) time.Time {
	sec, nsec, _ := strings.Cut(s, ".")
	a, _ := strconv.ParseInt(sec, 10, 64)
	b, _ := strconv.ParseInt((nsec + "000000000")[:9], 10, 64)
	return time.Unix(a, b).UTC()
}

// CreateTopic creates a topic with memo, the operator's key as admin key and, when
// submitKey is set, its public key as the submit key; it returns the topic id
// ("0.0.N") for HEDERA_TOPIC_ID.
func (h *HCS) CreateTopic(ctx context.Context, memo string, submitKey Secret) (string, error) {
	var topic string
	err := h.call(ctx, "create topic", func() error {
		tx := hiero.NewTopicCreateTransaction().
			SetTopicMemo(memo).
			SetAdminKey(h.cfg.OperatorKey.key.PublicKey()).
			SetNodeAccountIDs(h.nodes).
			SetTransactionID(hiero.NewTransactionIDWithValidStart(h.operator, h.nextValidStart())).
			SetRegenerateTransactionID(false)
		if pk, ok := submitKey.PublicKey(); ok {
			tx.SetSubmitKey(pk)
		}
		resp, err := tx.Execute(h.client)
		if err != nil {
			return fmt.Errorf("hcs: create topic: %w", err)
		}
		rc, err := hiero.NewTransactionReceiptQuery().
			SetTransactionID(resp.TransactionID).
			SetNodeAccountIDs(h.nodes).
			Execute(h.client)
		if err != nil {
			return fmt.Errorf("hcs: create topic receipt: %w", err)
		}
		if rc.Status != hiero.StatusSuccess || rc.TopicID == nil {
			return fmt.Errorf("hcs: create topic: %s", rc.Status)
		}
		topic = rc.TopicID.String()
		return nil
	})
	return topic, err
}
