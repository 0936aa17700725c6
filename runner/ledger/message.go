package ledger

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// Message format
//
// Every ledger message is one compact JSON object, version 1, with the fields in a
// fixed order (the order of the Message struct):
//
//	{"v":1,"type":"task.complete","task":42,"goal":7,"step":2,"agent":"dev-1",
//	 "verifier":"runner","kind":"runner","contract":"<sha384 hex>",
//	 "output":"<sha384 hex>","override":false,"ts":"2026-05-01T10:00:00.123456Z"}
//
//	{"v":1,"type":"task.revoked","task":42,"goal":7,"step":2,"by":"lead-ann",
//	 "why":"reopened","revokes":17,"payload":"<sha384 hex>","size":96,"ts":"…"}
//
//	{"v":1,"type":"task.blocked","task":43,"goal":7,"step":3,"agent":"dev-2",
//	 "attempts":2,"stage":"verify","payload":"<sha384 hex>","size":2317,"ts":"…"}
//
//	{"v":1,"type":"goal.verified","goal":7,"verifier":"lead-ann","verified":5,
//	 "cancelled":1,"deferred":2,"payload":"<sha384 hex>","size":412,"ts":"…"}
//
// ("deferred": the deferred criteria — e2e, integration — that ran on the integrated
// result and passed before the lead could verify; absent when there were none.)
//
//	{"v":1,"type":"goal.revoked","goal":7,"by":"lead-ann","why":"reopened",
//	 "revokes":23,"payload":"<sha384 hex>","size":80,"ts":"…"}
//
// Kinds. task.complete's "kind" says how the task was verified: "runner" (every
// automated check passed), "advisory" (the contract has no automated checks) or
// "override" (an exec accepted it without its checks passing); "verifier" says who
// looked — "runner" when no person did. Messages written before kinds existed carry
// no "kind"; their "override" still tells an exec's acceptance.
//
// Revocations. task.revoked and goal.revoked withdraw the task's (goal's) latest
// task.complete (goal.verified): "why" is "reopened" or "drift", "by" who decided,
// "revokes" the ledger sequence of the withdrawn message. That sequence exists only
// once the withdrawn entry is posted, so the publisher writes it in just before it
// prepares the revocation (see FillRevokes): entries are posted in order, so it is
// known by then. The payload (JSON: the entry ids and the person's reason, in full)
// is kept like task.blocked's.
//
// Trees. task.complete's "commit" is the verified commit and "tree" its tree: the
// candidate the judge fixed before any check ran and judged, which is exactly what
// landed (absent for tasks verified before candidates existed).
//
// Attestations. task.complete's "attestation" is the SHA-256 (hex) of the signed
// in-toto Statement the runner made for the completion (runner/attest), kept with the
// entry and served by the API; absent when no attestation was made (no signing key, or
// nothing to attest: no commit and no deliverable).
//
// Ids are JSON numbers; absent ids (a task with no goal) are left out. Hashes are
// lower-case hex SHA-384 (96 characters). Times are RFC 3339 in UTC with at most
// microsecond precision (what both databases keep).
//
// Size. A message must fit one 1024-byte HCS chunk so that one ledger entry is one
// transaction, the unit the exactly-once protocol works on. Everything in a message
// is bounded except names; a name is cut (at a rune boundary) so that its JSON form
// is at most MaxNameJSON bytes, whatever characters it holds. The worst case (maximal
// ids, maximal escaped names, every field present, the judge's counts at their largest, SHA-256 commit and
// tree ids, the attestation's digest, the longest kind) is 997 bytes for task.complete,
// whose names are cut at MaxCompleteNameJSON;
// the tests build it. Builders still check the final size and refuse anything over
// MaxMessageBytes.
//
// task.blocked: summary, not chunks. The blocked payload holds every attempt's
// failure and is routinely larger than a chunk. It is NOT chunked: the message is a
// summary carrying the SHA-384 and byte length of the full payload, which is kept
// verbatim in LedgerEntry.Payload and served by the API. Reasons: a chunked message is
// several transactions, and a crash between chunks leaves a half-posted entry that no
// receipt query can make whole (the exactly-once unit would no longer be one
// transaction); each chunk costs a fee; failure text can contain worker output that
// should not be published forever on a public topic, while the hash commits to it
// just as firmly. The summary is used for every blocked payload, small or large, so
// that a reader never has to guess which form a message has. goal.verified uses the
// same scheme for the lead's notes.

// MaxMessageBytes is the size of one HCS chunk; no ledger message may exceed it.
const MaxMessageBytes = 1024

// MaxNameJSON bounds the JSON-encoded form (quotes excluded) of a name or stage in a
// message, so that escaping cannot blow a message past MaxMessageBytes.
const MaxNameJSON = 96

// MaxCompleteNameJSON bounds the builder's and verifier's names in task.complete,
// tighter than MaxNameJSON to leave room for the attestation's digest: an agent's name
// is at most 63 characters of [a-z0-9._-] (models), so no valid name is cut.
const MaxCompleteNameJSON = 64

// MessageVersion is the version written into every message's "v" field.
const MessageVersion = 1

// Message is the decoded form of every ledger message; which fields are present
// depends on Type (see the format description above).
type Message struct {
	V         int    `json:"v"`
	Type      string `json:"type"`
	Task      int64  `json:"task,omitempty"`
	Goal      int64  `json:"goal,omitempty"`
	Step      int    `json:"step,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Verifier  string `json:"verifier,omitempty"`
	Kind      string `json:"kind,omitempty"` // task.complete: how it was verified
	By        string `json:"by,omitempty"`   // revocations: who decided
	Why       string `json:"why,omitempty"`  // revocations: reopened or drift
	Revokes   int64  `json:"revokes,omitempty"`
	Contract  string `json:"contract,omitempty"`
	Output    string `json:"output,omitempty"`
	Override  *bool  `json:"override,omitempty"` // always present in task.complete
	Attempts  int    `json:"attempts,omitempty"`
	Stage     string `json:"stage,omitempty"`
	Verified  *int   `json:"verified,omitempty"`  // goal.verified: tasks verified
	Cancelled *int   `json:"cancelled,omitempty"` // goal.verified: tasks cancelled
	Deferred  int    `json:"deferred,omitempty"`  // goal.verified: deferred criteria that passed
	Payload   string `json:"payload,omitempty"`   // SHA-384 hex of LedgerEntry.Payload
	Size      int    `json:"size,omitempty"`      // byte length of LedgerEntry.Payload
	// Judge: task.complete's counts of what the judge found (absent when no
	// judge's view ran, for tasks verified before it existed or advisory ones).
	Judge *JudgeCounts `json:"judge,omitempty"`
	// Commit: task.complete's verified git commit (40 or 64 hex), for a task that
	// worked on a branch of its own.
	Commit string `json:"commit,omitempty"`
	// Tree: task.complete's judged tree (40 or 64 hex): the candidate the checks ran
	// on, which the verified commit's tree equals.
	Tree string `json:"tree,omitempty"`
	// Attestation: task.complete's signed attestation's digest (SHA-256 hex of its
	// in-toto Statement; runner/attest), when one was made.
	Attestation string `json:"attestation,omitempty"`
	TS          string `json:"ts"`
}

// JudgeCounts is the judge's report as counts, for task.complete: how many protected
// files the worker changed and whether the checks ran with them restored; the test
// floor as [at base, run, passed, skipped, missing]; the held-out tests as [files,
// failed]. Never names or contents: at most about 120 bytes.
type JudgeCounts struct {
	Changed  int     `json:"changed"`
	Restored bool    `json:"restored"`
	Floor    *[5]int `json:"floor,omitempty"`
	HeldOut  *[2]int `json:"held_out,omitempty"`
}

// JudgeCountsOf summarises r; nil for nil.
func JudgeCountsOf(r *models.JudgeReport) *JudgeCounts {
	if r == nil {
		return nil
	}
	c := &JudgeCounts{Changed: len(r.Protected), Restored: r.Restored}
	if f := r.Floor; f != nil {
		c.Floor = &[5]int{f.AtBase, f.Run, f.Passed, f.Skipped, f.Missing}
	}
	if h := r.HeldOut; h != nil {
		c.HeldOut = &[2]int{h.Files, len(h.Failed)}
	}
	return c
}

// Encode returns the compact JSON of m (no HTML escaping, no trailing newline) and
// refuses a message over MaxMessageBytes.
func (m Message) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("ledger: %s message is %d bytes, over the %d-byte chunk", m.Type, len(b), MaxMessageBytes)
	}
	return b, nil
}

// ParseMessage decodes a ledger message and checks its version and type.
func ParseMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("ledger: message is not JSON: %w", err)
	}
	if m.V != MessageVersion {
		return m, fmt.Errorf("ledger: message version %d is not supported", m.V)
	}
	switch m.Type {
	case models.LedgerTaskComplete, models.LedgerTaskBlocked, models.LedgerGoalVerified,
		models.LedgerTaskRevoked, models.LedgerGoalRevoked:
	default:
		return m, fmt.Errorf("ledger: unknown message type %q", m.Type)
	}
	return m, nil
}

// SHA384Hex returns the lower-case hex SHA-384 of b: the form of every hash in a
// ledger message.
func SHA384Hex(b []byte) string {
	h := sha512.Sum384(b)
	return hex.EncodeToString(h[:])
}

// Timestamp formats t the way messages carry it: UTC, RFC 3339, microseconds at most.
func Timestamp(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

// LimitName returns s cut at a rune boundary so that its JSON string form (without
// quotes, HTML characters not escaped) is at most max bytes. Invalid UTF-8 is
// replaced by U+FFFD first, as encoding/json would.
func LimitName(s string, max int) string {
	if !utf8.ValidString(s) {
		s = string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
	}
	n := 0
	for i, r := range s {
		w := jsonRuneLen(r)
		if n+w > max {
			return s[:i]
		}
		n += w
	}
	return s
}

// jsonRuneLen is the number of bytes encoding/json (HTML escaping off) writes for r
// inside a string.
func jsonRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20, r == '\u2028', r == '\u2029':
		return 6
	default:
		return utf8.RuneLen(r)
	}
}

func hashOK(h string) bool {
	if len(h) != 2*sha512.Size384 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// TaskComplete describes a verified completion; TaskCompleteEntry turns it into a
// ledger entry.
type TaskComplete struct {
	TaskID   int64
	GoalID   int64 // 0: the task belongs to no goal
	Step     int   // 0: not a workflow step
	Agent    string
	Verifier string
	Kind     string // models.KindRunner, KindAdvisory or KindOverride; see kind
	Contract string // SHA-384 hex of the task's contract (ContractHash)
	Output   string // SHA-384 hex of the verified output; "" when there is none
	Override bool   // accepted by the exec without passing the checks
	Judge    *JudgeCounts
	Commit   string // the verified git commit; "" for a task without a branch
	Tree     string // the judged candidate's git tree; "" when no candidate was taken
	// Attestation is the SHA-256 hex of the completion's attestation statement; ""
	// when none was signed.
	Attestation string
	At          time.Time
}

// kind is c.Kind, or when empty what Override implies: override or runner.
func (c TaskComplete) kind() string {
	switch {
	case c.Kind != "":
		return c.Kind
	case c.Override:
		return models.KindOverride
	default:
		return models.KindRunner
	}
}

// Message builds the task.complete message. It always fits one chunk.
func (c TaskComplete) Message() (Message, error) {
	if c.TaskID <= 0 {
		return Message{}, fmt.Errorf("ledger: task.complete needs a task id")
	}
	if !hashOK(c.Contract) {
		return Message{}, fmt.Errorf("ledger: task.complete contract hash must be SHA-384 hex")
	}
	if c.Output != "" && !hashOK(c.Output) {
		return Message{}, fmt.Errorf("ledger: task.complete output hash must be SHA-384 hex")
	}
	kind := c.kind()
	switch kind {
	case models.KindRunner, models.KindAdvisory, models.KindOverride:
	default:
		return Message{}, fmt.Errorf("ledger: task.complete kind %q is not runner, advisory or override", kind)
	}
	if (kind == models.KindOverride) != c.Override {
		return Message{}, fmt.Errorf("ledger: task.complete kind %q disagrees with override=%v", kind, c.Override)
	}
	if c.Commit != "" && !commitOK(c.Commit) {
		return Message{}, fmt.Errorf("ledger: task.complete commit must be a 40- or 64-digit lower-case hex object id")
	}
	if c.Tree != "" && !commitOK(c.Tree) {
		return Message{}, fmt.Errorf("ledger: task.complete tree must be a 40- or 64-digit lower-case hex object id")
	}
	if c.Attestation != "" && (len(c.Attestation) != 64 || !lowerHex(c.Attestation)) {
		return Message{}, fmt.Errorf("ledger: task.complete attestation must be a SHA-256 in lower-case hex")
	}
	ov := c.Override
	return Message{
		V: MessageVersion, Type: models.LedgerTaskComplete,
		Task: c.TaskID, Goal: c.GoalID, Step: c.Step,
		Agent: LimitName(c.Agent, MaxCompleteNameJSON), Verifier: LimitName(c.Verifier, MaxCompleteNameJSON), Kind: kind,
		Contract: c.Contract, Output: c.Output, Override: &ov, Judge: c.Judge, Commit: c.Commit, Tree: c.Tree,
		Attestation: c.Attestation, TS: Timestamp(c.At),
	}, nil
}

// Entry returns the pending ledger entry for c.
func (c TaskComplete) Entry() (*models.LedgerEntry, error) {
	m, err := c.Message()
	if err != nil {
		return nil, err
	}
	b, err := m.Encode()
	if err != nil {
		return nil, err
	}
	e := newEntry(models.LedgerTaskComplete, c.TaskID, c.GoalID, b, nil, c.Override, c.At)
	e.Kind = c.kind()
	return e, nil
}

// TaskBlocked describes a task blocked after its attempts ran out. Payload is the
// full payload (completion-verification.md); it is stored, and the message carries
// its hash.
type TaskBlocked struct {
	TaskID   int64
	GoalID   int64
	Step     int
	Agent    string
	Attempts int
	Stage    string // the stage the last attempt failed at
	Payload  []byte // JSON
	At       time.Time
}

// Message builds the task.blocked summary message; it fits one chunk whatever the
// size of the payload.
func (b TaskBlocked) Message() (Message, error) {
	if b.TaskID <= 0 {
		return Message{}, fmt.Errorf("ledger: task.blocked needs a task id")
	}
	if len(b.Payload) == 0 || !json.Valid(b.Payload) {
		return Message{}, fmt.Errorf("ledger: task.blocked payload must be JSON")
	}
	return Message{
		V: MessageVersion, Type: models.LedgerTaskBlocked,
		Task: b.TaskID, Goal: b.GoalID, Step: b.Step,
		Agent: LimitName(b.Agent, MaxNameJSON), Attempts: b.Attempts, Stage: LimitName(b.Stage, MaxNameJSON),
		Payload: SHA384Hex(b.Payload), Size: len(b.Payload), TS: Timestamp(b.At),
	}, nil
}

// Entry returns the pending ledger entry for b, with Payload set.
func (b TaskBlocked) Entry() (*models.LedgerEntry, error) {
	m, err := b.Message()
	if err != nil {
		return nil, err
	}
	msg, err := m.Encode()
	if err != nil {
		return nil, err
	}
	return newEntry(models.LedgerTaskBlocked, b.TaskID, b.GoalID, msg, b.Payload, false, b.At), nil
}

// GoalVerified describes a goal verified by its lead. Payload (JSON: the goal's title
// and the lead's notes) is stored; the message carries its hash.
type GoalVerified struct {
	GoalID    int64
	Verifier  string
	Verified  int
	Cancelled int
	Deferred  int // deferred criteria that ran and passed on the integrated result
	Payload   []byte
	At        time.Time
}

// Message builds the goal.verified message.
func (g GoalVerified) Message() (Message, error) {
	if g.GoalID <= 0 {
		return Message{}, fmt.Errorf("ledger: goal.verified needs a goal id")
	}
	if len(g.Payload) == 0 || !json.Valid(g.Payload) {
		return Message{}, fmt.Errorf("ledger: goal.verified payload must be JSON")
	}
	v, c := g.Verified, g.Cancelled
	return Message{
		V: MessageVersion, Type: models.LedgerGoalVerified, Goal: g.GoalID,
		Verifier: LimitName(g.Verifier, MaxNameJSON), Verified: &v, Cancelled: &c, Deferred: g.Deferred,
		Payload: SHA384Hex(g.Payload), Size: len(g.Payload), TS: Timestamp(g.At),
	}, nil
}

// Entry returns the pending ledger entry for g, with Payload set.
func (g GoalVerified) Entry() (*models.LedgerEntry, error) {
	m, err := g.Message()
	if err != nil {
		return nil, err
	}
	msg, err := m.Encode()
	if err != nil {
		return nil, err
	}
	return newEntry(models.LedgerGoalVerified, 0, g.GoalID, msg, g.Payload, false, g.At), nil
}

func newEntry(typ string, taskID, goalID int64, msg, payload []byte, override bool, at time.Time) *models.LedgerEntry {
	e := &models.LedgerEntry{
		Type: typ, Message: msg, Payload: payload, Status: models.LedgerPending,
		Override: override, CreatedAt: at.UTC(),
	}
	if taskID > 0 {
		id := taskID
		e.TaskID = &id
	}
	if goalID > 0 {
		id := goalID
		e.GoalID = &id
	}
	return e
}

// CheckPayload reports whether e.Payload is the payload its message commits to (for
// messages that carry a payload hash). VerifyChain calls it for every entry.
func CheckPayload(e *models.LedgerEntry) error {
	m, err := ParseMessage(e.Message)
	if err != nil {
		return err
	}
	if m.Payload == "" {
		if len(e.Payload) != 0 {
			return fmt.Errorf("ledger: entry %d has a payload its message does not commit to", e.ID)
		}
		return nil
	}
	if SHA384Hex(e.Payload) != m.Payload || len(e.Payload) != m.Size {
		return fmt.Errorf("ledger: entry %d payload does not match the hash in its message", e.ID)
	}
	return nil
}

// commitOK reports whether s is a git object id: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits.
func commitOK(s string) bool {
	return (len(s) == 40 || len(s) == 64) && lowerHex(s)
}

// lowerHex reports whether s is only lower-case hex digits.
func lowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Revoked describes a task.revoked or goal.revoked: it withdraws entry RevokesID (the
// task's latest task.complete, the goal's latest goal.verified). Payload (JSON: the
// ids and the person's reason in full) is stored; the message carries its hash.
// Revokes, the withdrawn entry's ledger sequence, is 0 until FillRevokes sets it.
type Revoked struct {
	Type      string // models.LedgerTaskRevoked or models.LedgerGoalRevoked
	TaskID    int64  // task.revoked: the task; 0 for goal.revoked
	GoalID    int64
	Step      int
	By        string
	Why       string // models.RevokedReopened or models.RevokedDrift
	RevokesID int64
	Revokes   int64
	Payload   []byte
	At        time.Time
}

// Message builds the revocation message; it fits one chunk.
func (r Revoked) Message() (Message, error) {
	switch {
	case r.Type == models.LedgerTaskRevoked && r.TaskID <= 0:
		return Message{}, fmt.Errorf("ledger: task.revoked needs a task id")
	case r.Type == models.LedgerGoalRevoked && (r.GoalID <= 0 || r.TaskID != 0):
		return Message{}, fmt.Errorf("ledger: goal.revoked needs a goal id and no task")
	case r.Type != models.LedgerTaskRevoked && r.Type != models.LedgerGoalRevoked:
		return Message{}, fmt.Errorf("ledger: %q is not a revocation", r.Type)
	case r.Why != models.RevokedReopened && r.Why != models.RevokedDrift:
		return Message{}, fmt.Errorf("ledger: a revocation's why must be reopened or drift, not %q", r.Why)
	case r.RevokesID <= 0:
		return Message{}, fmt.Errorf("ledger: a revocation must name the entry it withdraws")
	case len(r.Payload) == 0 || !json.Valid(r.Payload):
		return Message{}, fmt.Errorf("ledger: a revocation's payload must be JSON")
	}
	return Message{
		V: MessageVersion, Type: r.Type, Task: r.TaskID, Goal: r.GoalID, Step: r.Step,
		By: LimitName(r.By, MaxNameJSON), Why: r.Why, Revokes: r.Revokes,
		Payload: SHA384Hex(r.Payload), Size: len(r.Payload), TS: Timestamp(r.At),
	}, nil
}

// Entry returns the pending ledger entry for r, with Payload and RevokesID set.
func (r Revoked) Entry() (*models.LedgerEntry, error) {
	m, err := r.Message()
	if err != nil {
		return nil, err
	}
	msg, err := m.Encode()
	if err != nil {
		return nil, err
	}
	e := newEntry(r.Type, r.TaskID, r.GoalID, msg, r.Payload, false, r.At)
	id := r.RevokesID
	e.RevokesID = &id
	return e, nil
}
