// Package ledger is the ledger page (entries with their status and receipt, HashScan
// links on HCS, a verify-chain button for the local chain) and the entry page (the
// exact message bytes and, for a summarised entry, the full payload).
package ledger

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the ledger list's model.
type View struct {
	Meta layout.PageMeta
	CSRF string
	// Kind is "local" or "hcs"; TopicURL links the HCS topic on HashScan.
	Kind     string
	TopicID  string
	TopicURL string
	Rows     []Row
	// After is the id this page starts after; Next is the After of the next page
	// (0: none).
	After int64
	Next  int64
	// TaskID or GoalID, when set, keep the page to that task's (goal's) chain.
	TaskID int64
	GoalID int64
	// Verify is the result of the verify-chain button, nil before it is pressed.
	Verify *VerifyResult
}

// Row is one ledger entry.
type Row struct {
	ID          int64
	Type        string
	TaskID      int64 // 0: none
	GoalID      int64 // 0: none
	Status      string
	Attempts    int
	LastError   string
	Override    bool
	Kind        string // task.complete: runner, advisory or override ("" before kinds)
	RevokesID   int64  // revocations: the entry withdrawn
	Sequence    int64
	RunningHash string // full hex
	ConsensusAt time.Time
	TxID        string
	HashScan    string // "" unless HCS on a network HashScan shows
	Summarised  bool
}

// VerifyResult is what VerifyChain found.
type VerifyResult struct {
	OK      bool
	Entries int // rows read
	Posted  int // rows in the chain
	TipSeq  int64
	TipHash string
	// BadID, BadSeq, Problem and Detail name the first broken entry when !OK.
	BadID   int64
	BadSeq  int64
	Problem string
	Detail  string
	// Note explains a result that is neither (the HCS ledger is verified against
	// its topic, not here).
	Note string
}

// EntryView is the entry page's model.
type EntryView struct {
	Meta      layout.PageMeta
	Kind      string
	Row       Row
	CreatedAt time.Time
	PostedAt  time.Time
	// Message is the exact bytes posted, as text; MessageSHA their SHA-384 (hex);
	// MessageBytes their length.
	Message      string
	MessageSHA   string
	MessageBytes int
	// Payload is the full payload of a summarised entry (indented when it is JSON).
	Payload string
}

// Short returns the first 12 characters of a hash for tables.
func Short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func href(id int64) string { return "/ledger/" + i64(id) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func itoa(n int) string { return strconv.Itoa(n) }

// nextHref is the next page's address, keeping the page's task or goal filter.
func nextHref(v View) string { return filterHref(v) + "after=" + i64(v.Next) }

// filterHref is /ledger? with the page's task or goal filter, ready for one more
// parameter.
func filterHref(v View) string {
	switch {
	case v.TaskID != 0:
		return "/ledger?task=" + i64(v.TaskID) + "&"
	case v.GoalID != 0:
		return "/ledger?goal=" + i64(v.GoalID) + "&"
	}
	return "/ledger?"
}

// kindLabel says in words how a task.complete was verified.
func kindLabel(kind string) string {
	switch kind {
	case "runner":
		return "runner: every automated check of the contract passed"
	case "advisory":
		return "advisory: no automated checks; the verifier looked (the runner: nobody did)"
	case "override":
		return "override: accepted by an exec without its checks passing"
	}
	return kind
}

func rowItems(r Row, k string, created, posted time.Time) []components.DefItem {
	items := []components.DefItem{
		{Term: "Type", Value: r.Type},
		{Term: "Status", Value: r.Status},
		{Term: "Attempts", Value: itoa(r.Attempts)},
		{Term: "Last error", Value: r.LastError},
		{Term: "Ledger", Value: k},
	}
	if r.Sequence > 0 {
		items = append(items, components.DefItem{Term: "Sequence", Value: i64(r.Sequence)})
	}
	items = append(items, components.DefItem{Term: "Running hash", Value: r.RunningHash, Mono: true},
		components.DefItem{Term: "Transaction id", Value: r.TxID, Mono: true})
	if !r.ConsensusAt.IsZero() {
		items = append(items, components.DefItem{Term: "Consensus time", Value: r.ConsensusAt.UTC().Format(time.RFC3339Nano)})
	}
	if !created.IsZero() {
		items = append(items, components.DefItem{Term: "Written", At: created})
	}
	if !posted.IsZero() {
		items = append(items, components.DefItem{Term: "Posted", At: posted})
	}
	if r.Kind != "" {
		items = append(items, components.DefItem{Term: "Verified", Value: kindLabel(r.Kind)})
	} else if r.Override {
		items = append(items, components.DefItem{Term: "Override", Value: "accepted by the exec without passing checks"})
	}
	if r.RevokesID != 0 {
		items = append(items, components.DefItem{Term: "Revokes", Value: "entry #" + i64(r.RevokesID)})
	}
	return items
}

func subtitle(v View) string {
	switch {
	case v.TaskID != 0:
		return "The chain of task #" + i64(v.TaskID) + ": each completion, and what revoked it."
	case v.GoalID != 0:
		return "The entries of goal #" + i64(v.GoalID) + " and its tasks."
	}
	if v.Kind == "hcs" {
		s := "Posted to Hedera Consensus Service"
		if v.TopicID != "" {
			s += " topic " + v.TopicID
		}
		return s + ", in order, exactly once."
	}
	return "A local SHA-384 hash chain: every entry binds the one before it."
}

func shortErr(s string) string {
	r := []rune(s)
	if len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
