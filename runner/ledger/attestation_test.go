package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/attest"
)

// postedChain composes a task.complete with an attestation for task 5 and a
// revocation of it, posted at sequences 1 and 2, and returns them with the digest.
func postedChain(t *testing.T) ([]models.LedgerEntry, string) {
	t.Helper()
	s, err := attest.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	task := &models.Task{ID: 5, Title: "t", Commit: strings.Repeat("a", 40)}
	k := Composer{Signer: s}
	c, err := k.TaskComplete(models.Completion{Task: task, Kind: models.KindRunner, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	c.ID, c.Status, c.Sequence = 1, models.LedgerPosted, 1
	r, err := k.TaskRevoked(task, c, nil, models.RevokedDrift, "changed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r.ID, r.Status, r.Sequence = 2, models.LedgerPosted, 2
	m, err := ParseMessage(c.Message)
	if err != nil || m.Attestation == "" {
		t.Fatalf("task.complete names no attestation: %s", c.Message)
	}
	return []models.LedgerEntry{*c, *r}, m.Attestation
}

// TestFindAttestation: the entry naming the digest is found and its revocation with
// it; another digest or another task is not on the ledger; without the revocation
// check a withdrawn attestation would pass as standing.
func TestFindAttestation(t *testing.T) {
	entries, digest := postedChain(t)
	r, err := FindAttestation(entries, 5, digest)
	if err != nil || r.Complete.ID != 1 || r.Revoked == nil || r.Revoked.ID != 2 || r.Why != models.RevokedDrift {
		t.Fatalf("found %+v, %v", r, err)
	}
	if r, err := FindAttestation(entries[:1], 5, digest); err != nil || r.Revoked != nil {
		t.Fatalf("before the revocation: %+v, %v", r, err)
	}
	if _, err := FindAttestation(entries, 5, strings.Repeat("0", 64)); err != ErrNotOnLedger {
		t.Fatalf("another digest: %v", err)
	}
	if _, err := FindAttestation(entries, 6, digest); err != ErrNotOnLedger {
		t.Fatalf("another task: %v", err)
	}
	pending := append([]models.LedgerEntry(nil), entries...)
	pending[0].Status = models.LedgerPending
	if _, err := FindAttestation(pending, 5, digest); err != ErrNotOnLedger {
		t.Fatalf("a pending entry counts as recorded: %v", err)
	}
	// The revocation found by the withdrawn entry's sequence alone (a topic's reader).
	bySeq := append([]models.LedgerEntry(nil), entries...)
	bySeq[1].RevokesID = nil
	m, _ := ParseMessage(bySeq[1].Message)
	m.Revokes = 1
	bySeq[1].Message, _ = m.Encode()
	if r, err := FindAttestation(bySeq, 5, digest); err != nil || r.Revoked == nil {
		t.Fatalf("revocation by sequence: %+v, %v", r, err)
	}

	revocationOff = true
	defer func() { revocationOff = false }()
	if r, _ := FindAttestation(entries, 5, digest); r.Revoked != nil {
		t.Fatal("revocationOff did not turn the check off")
	}
}

// TestNoSignerNoAttestation: the zero Composer signs nothing and its task.complete
// names no attestation; a signing one leaves a task with no commit and no deliverable
// unattested too.
func TestNoSignerNoAttestation(t *testing.T) {
	task := &models.Task{ID: 5, Commit: strings.Repeat("a", 40)}
	e, err := Composer{}.TaskComplete(models.Completion{Task: task, Kind: models.KindRunner, At: time.Now()})
	if err != nil || e.Attestation != nil || strings.Contains(string(e.Message), "attestation") {
		t.Fatalf("zero composer: %s %v", e.Message, err)
	}
	s, err := attest.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err = Composer{Signer: s}.TaskComplete(models.Completion{Task: &models.Task{ID: 6}, Kind: models.KindAdvisory, At: time.Now()})
	if err != nil || e.Attestation != nil {
		t.Fatalf("nothing to attest: %d bytes, %v", len(e.Attestation), err)
	}
}
