package ledger

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestTaskCompleteSaysHowItWasVerified: the kind is in the message and on the entry,
// and a kind that contradicts the override flag, or no kind at all, is refused.
func TestTaskCompleteSaysHowItWasVerified(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		override bool
	}{{models.KindRunner, false}, {models.KindAdvisory, false}, {models.KindOverride, true}} {
		e, err := TaskComplete{TaskID: 9, Verifier: "lead-ann", Kind: tc.kind, Override: tc.override, Contract: hashA, At: time.Now()}.Entry()
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMessage(e.Message)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind != tc.kind || e.Kind != tc.kind || !strings.Contains(string(e.Message), `"kind":"`+tc.kind+`"`) {
			t.Errorf("kind %s: message %s, entry kind %q", tc.kind, e.Message, e.Kind)
		}
	}
	for name, c := range map[string]TaskComplete{
		"unknown kind":              {TaskID: 9, Kind: "vibes", Contract: hashA},
		"override without the flag": {TaskID: 9, Kind: models.KindOverride, Contract: hashA},
		"flag without override":     {TaskID: 9, Kind: models.KindAdvisory, Override: true, Contract: hashA},
	} {
		if _, err := c.Entry(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRevokedWorstCaseFitsOneChunk(t *testing.T) {
	r := Revoked{Type: models.LedgerTaskRevoked, TaskID: math.MaxInt64, GoalID: math.MaxInt64, Step: math.MaxInt,
		By: worstName(), Why: models.RevokedReopened, RevokesID: math.MaxInt64, Revokes: math.MaxInt64,
		Payload: []byte(`{"reason":"` + strings.Repeat("x", 100000) + `"}`), At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	e, err := r.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Message) > MaxMessageBytes || CheckPayload(e) != nil || e.RevokesID == nil || *e.RevokesID != math.MaxInt64 {
		t.Fatalf("%d bytes, payload check %v", len(e.Message), CheckPayload(e))
	}
	for name, bad := range map[string]Revoked{
		"no entry":         {Type: models.LedgerTaskRevoked, TaskID: 1, Why: models.RevokedDrift, Payload: []byte(`{}`)},
		"unknown why":      {Type: models.LedgerTaskRevoked, TaskID: 1, Why: "bored", RevokesID: 1, Payload: []byte(`{}`)},
		"goal with a task": {Type: models.LedgerGoalRevoked, TaskID: 1, GoalID: 2, Why: models.RevokedDrift, RevokesID: 1, Payload: []byte(`{}`)},
		"not a revocation": {Type: models.LedgerTaskComplete, TaskID: 1, Why: models.RevokedDrift, RevokesID: 1, Payload: []byte(`{}`)},
	} {
		if _, err := bad.Entry(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestFillRevokes: a revocation composed while the entry it withdraws was pending gets
// that entry's sequence once it is posted, before it is prepared, and never after.
func TestFillRevokes(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	task := &models.Task{ID: 5}
	complete, err := Composer{}.TaskComplete(models.Completion{Task: task, Kind: models.KindRunner, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendLedgerEntry(ctx, complete); err != nil {
		t.Fatal(err)
	}
	revoked, err := Composer{}.TaskRevoked(task, complete, &models.Agent{Name: "lead-ann"}, models.RevokedReopened, "regressed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := ParseMessage(revoked.Message); m.Revokes != 0 || m.Why != models.RevokedReopened || m.By != "lead-ann" {
		t.Fatalf("composed while pending: %s", revoked.Message)
	}
	if changed, err := FillRevokes(ctx, st, revoked); !errors.Is(err, ErrRevokedInFlight) || changed {
		t.Fatalf("filled from a pending entry: %v %v", changed, err)
	}
	complete.Status, complete.Sequence = models.LedgerPosted, 41
	if err := st.UpdateLedgerEntry(ctx, complete); err != nil {
		t.Fatal(err)
	}
	prepared := *revoked
	prepared.TxID = "0.0.2@1.1"
	if changed, _ := FillRevokes(ctx, st, &prepared); changed {
		t.Fatal("a prepared entry's message was changed")
	}
	changed, err := FillRevokes(ctx, st, revoked)
	if err != nil || !changed {
		t.Fatalf("not filled: %v %v", changed, err)
	}
	m, err := ParseMessage(revoked.Message)
	if err != nil || m.Revokes != 41 || CheckPayload(revoked) != nil {
		t.Fatalf("%s (%v)", revoked.Message, err)
	}
	if changed, _ := FillRevokes(ctx, st, revoked); changed {
		t.Fatal("filled twice")
	}
}

// TestPublisherFillsTheSequenceARevocationNames: a task.complete and its task.revoked
// written before either is posted reach the local chain with the revocation naming the
// completion's sequence.
func TestPublisherFillsTheSequenceARevocationNames(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	task := &models.Task{ID: 8}
	complete, err := Composer{}.TaskComplete(models.Completion{Task: task, Kind: models.KindRunner, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendLedgerEntry(ctx, complete); err != nil {
		t.Fatal(err)
	}
	revoked, err := Composer{}.TaskRevoked(task, complete, &models.Agent{Name: "lead"}, models.RevokedReopened, "regressed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendLedgerEntry(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	pub := NewPublisher(st, NewLocal(st), Options{})
	if n, err := pub.Drain(ctx); err != nil || n != 2 {
		t.Fatalf("drain: %d %v", n, err)
	}
	posted, err := st.GetLedgerEntry(ctx, revoked.ID)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := st.GetLedgerEntry(ctx, complete.ID)
	m, err := ParseMessage(posted.Message)
	if err != nil || m.Revokes == 0 || m.Revokes != first.Sequence || posted.Sequence != first.Sequence+1 {
		t.Fatalf("revocation %s (sequence %d), completion sequence %d", posted.Message, posted.Sequence, first.Sequence)
	}
	entries, err := ReadAll(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyChain(entries); err != nil {
		t.Fatalf("the chain with a filled revocation: %v", err)
	}
}
