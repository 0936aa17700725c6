package ledger

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// HashSize is the length of a running hash: SHA-384.
const HashSize = sha512.Size384

// chainDomain separates Countersign's chain hashes from any other SHA-384 use.
const chainDomain = "countersign/ledger/chain/v1"

// ChainHash returns the running hash after a message:
//
//	SHA-384( frame("countersign/ledger/chain/v1") ‖ frame(prev) ‖ u64(seq) ‖
//	         i64(consensus unix seconds) ‖ u32(nanoseconds) ‖ frame(SHA-384(message)) )
//
// where frame(b) is a big-endian u32 length followed by b, and every integer is
// big-endian. Like HCS's version-3 hash it binds the previous hash, the position, the
// consensus time and the message, and every variable-length field is length-framed so
// that no two different inputs produce the same byte stream. prev is 48 zero bytes
// for the first message. at is used in UTC at microsecond precision (what both
// databases store), so the hash can be recomputed from a stored row.
func ChainHash(prev []byte, seq int64, at time.Time, message []byte) []byte {
	h := sha512.New384()
	frame(h, []byte(chainDomain))
	frame(h, prev)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h.Write(b[:])
	at = ChainTime(at)
	binary.BigEndian.PutUint64(b[:], uint64(at.Unix()))
	h.Write(b[:])
	binary.BigEndian.PutUint32(b[:4], uint32(at.Nanosecond()))
	h.Write(b[:4])
	m := sha512.Sum384(message)
	frame(h, m[:])
	return h.Sum(nil)
}

// ChainTime is t as the chain hashes and stores it: UTC, truncated to microseconds.
func ChainTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func frame(h hash.Hash, b []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// LedgerReader is the part of models.Store the local ledger reads.
type LedgerReader interface {
	ListLedger(ctx context.Context, f models.LedgerFilter) ([]models.LedgerEntry, error)
}

// Local is the default ledger: a SHA-384 hash chain over the entries, kept in the
// ledger rows themselves (Sequence, RunningHash, ConsensusAt written by the
// publisher). Submit computes the next link from the newest posted row; nothing is
// kept elsewhere, so a crash before the row is updated leaves no trace and the entry is
// simply submitted again. It relies on there being one publisher at a time.
//
// Local is deliberately not a Pipeline: the publisher posts to it one entry at a
// time. Its "consensus" is the publisher's row update itself, so there is no network
// round trip to overlap, and each link is computed from the newest recorded row;
// linking entries ahead of their recording would need a second, in-memory chain tip
// that a failed row update could leave ahead of the database.
type Local struct {
	store LedgerReader
	clock models.Clock

	mu   sync.Mutex
	tip  tip // newest posted entry seen
	page int
}

type tip struct {
	id   int64
	seq  int64
	hash []byte
	at   time.Time
}

// NewLocal returns the local ledger over the entries in store.
func NewLocal(store LedgerReader) *Local {
	return &Local{store: store, clock: time.Now, page: 500, tip: tip{hash: make([]byte, HashSize)}}
}

// SetClock replaces the clock that supplies consensus times (tests).
func (l *Local) SetClock(c models.Clock) { l.clock = c }

// Name returns "local".
func (l *Local) Name() string { return "local" }

// Prepare does nothing: the local ledger has no transaction to freeze.
func (l *Local) Prepare(context.Context, *models.LedgerEntry) error { return nil }

// refresh advances the cached tip over rows posted since it was last read (by this
// process or, after a takeover, by another).
func (l *Local) refresh(ctx context.Context) error {
	for {
		rows, err := l.store.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPosted, AfterID: l.tip.id, Limit: l.page})
		if err != nil {
			return fmt.Errorf("local ledger: read chain tip: %w", err)
		}
		for _, r := range rows {
			h, err := hex.DecodeString(r.RunningHash)
			if err != nil || len(h) != HashSize {
				return Permanent(fmt.Errorf("local ledger: entry %d has a malformed running hash", r.ID))
			}
			t := tip{id: r.ID, seq: r.Sequence, hash: h}
			if r.ConsensusAt != nil {
				t.at = ChainTime(*r.ConsensusAt)
			}
			l.tip = t
		}
		if len(rows) < l.page {
			return nil
		}
	}
}

// Submit links e.Message to the chain: the next sequence number and running hash
// after the newest posted entry. Consensus times never go backwards.
func (l *Local) Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	if len(e.Message) == 0 {
		return Receipt{}, Permanent(fmt.Errorf("local ledger: entry %d has an empty message", e.ID))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refresh(ctx); err != nil {
		return Receipt{}, err
	}
	at := ChainTime(l.clock())
	if at.Before(l.tip.at) {
		at = l.tip.at
	}
	seq := l.tip.seq + 1
	return Receipt{Sequence: seq, RunningHash: ChainHash(l.tip.hash, seq, at, e.Message), ConsensusAt: at}, nil
}

// Lookup returns the receipt already recorded in e, if any. A local Submit whose
// result was never recorded left no trace, so "not found" is always the truth and the
// entry is submitted again.
func (l *Local) Lookup(_ context.Context, e *models.LedgerEntry) (Receipt, bool, error) {
	if e.Status != models.LedgerPosted || e.Sequence == 0 || e.ConsensusAt == nil {
		return Receipt{}, false, nil
	}
	h, err := hex.DecodeString(e.RunningHash)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("local ledger: entry %d has a malformed running hash", e.ID)
	}
	return Receipt{Sequence: e.Sequence, RunningHash: h, ConsensusAt: *e.ConsensusAt}, true, nil
}

// Problems VerifyChain reports.
const (
	ChainAltered   = "altered"   // the stored message, payload, time or hash was changed
	ChainMissing   = "missing"   // entries before this one were removed (a sequence gap)
	ChainReordered = "reordered" // this entry is out of order (or repeated)
)

// ChainError names the first entry at which the chain breaks.
type ChainError struct {
	EntryID  int64  // the row where the break shows
	Sequence int64  // its stored sequence number
	Problem  string // ChainAltered, ChainMissing or ChainReordered
	Detail   string
}

// Error implements error.
func (e *ChainError) Error() string {
	return fmt.Sprintf("ledger chain broken at entry %d (sequence %d): %s: %s", e.EntryID, e.Sequence, e.Problem, e.Detail)
}

// VerifyChain recomputes the local hash chain over entries (all ledger rows, in ID
// order, as the store lists them; rows not posted are skipped) and returns a
// *ChainError naming the FIRST entry that was altered, that follows removed entries
// (a gap in the sequence), or that is out of order. It returns nil for an intact
// chain. Removing entries at the very end cannot be seen from the rows alone: compare
// the last running hash with one kept elsewhere (printed by `countersign ledger
// verify`). Entries posted to HCS are verified against the topic instead; meeting one
// here is an error.
func VerifyChain(entries []models.LedgerEntry) error {
	prev := make([]byte, HashSize)
	var prevSeq, prevID int64
	var prevAt time.Time
	for i := range entries {
		e := &entries[i]
		if e.Status != models.LedgerPosted {
			continue
		}
		fail := func(problem, format string, args ...any) error {
			return &ChainError{EntryID: e.ID, Sequence: e.Sequence, Problem: problem, Detail: fmt.Sprintf(format, args...)}
		}
		if e.TxID != "" {
			return fail(ChainAltered, "posted to HCS (transaction %s), not to the local chain", e.TxID)
		}
		if e.ID <= prevID {
			return fail(ChainReordered, "listed after entry %d", prevID)
		}
		switch {
		case e.Sequence <= prevSeq:
			return fail(ChainReordered, "sequence %d follows sequence %d", e.Sequence, prevSeq)
		case e.Sequence > prevSeq+1:
			for _, later := range entries[i+1:] {
				if later.Status == models.LedgerPosted && later.Sequence == prevSeq+1 {
					return fail(ChainReordered, "sequence %d comes later, at entry %d", prevSeq+1, later.ID)
				}
			}
			if prevSeq+1 == e.Sequence-1 {
				return fail(ChainMissing, "entry with sequence %d was removed", prevSeq+1)
			}
			return fail(ChainMissing, "entries with sequence %d to %d were removed", prevSeq+1, e.Sequence-1)
		}
		if e.ConsensusAt == nil {
			return fail(ChainAltered, "consensus time missing")
		}
		at := ChainTime(*e.ConsensusAt)
		if at.Before(prevAt) {
			return fail(ChainReordered, "consensus time %s is before the previous entry's", at.Format(time.RFC3339Nano))
		}
		stored, err := hex.DecodeString(e.RunningHash)
		if err != nil || len(stored) != HashSize {
			return fail(ChainAltered, "running hash is malformed")
		}
		want := ChainHash(prev, e.Sequence, at, e.Message)
		if !bytes.Equal(stored, want) {
			return fail(ChainAltered, "running hash does not match the stored message")
		}
		if err := CheckPayload(e); err != nil {
			return fail(ChainAltered, "%v", err)
		}
		prev, prevSeq, prevID, prevAt = stored, e.Sequence, e.ID, at
	}
	return nil
}

// ChainTip returns the sequence number and hex running hash of the last posted entry
// in entries: what an operator keeps elsewhere to detect removal at the end.
func ChainTip(entries []models.LedgerEntry) (int64, string) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Status == models.LedgerPosted {
			return entries[i].Sequence, entries[i].RunningHash
		}
	}
	return 0, ""
}

// ReadAll returns every entry in posting order, read a page at a time: what
// VerifyChain needs.
func ReadAll(ctx context.Context, r LedgerReader) ([]models.LedgerEntry, error) {
	const page = 1000
	var all []models.LedgerEntry
	var after int64
	for {
		rows, err := r.ListLedger(ctx, models.LedgerFilter{AfterID: after, Limit: page})
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
		if len(rows) < page {
			return all, nil
		}
		after = rows[len(rows)-1].ID
	}
}
