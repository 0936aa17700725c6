package runner

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// rawContract is a contract as it may be stored without passing through the service:
// no max_attempts, timeout or verify_timeout, no completion type, a review with no
// triggers or rounds. The runner must apply the contract's own defaults to it
// (issue #32: one home per rule).
func rawContract() contract.Contract {
	return contract.Contract{
		Completion:   contract.Completion{Path: "out/{task_id}.md", MinLength: 100, DoneToken: "TASK_COMPLETE"},
		Verification: contract.Verification{Type: contract.VerifyVerifiable},
		Review:       &contract.Review{Role: "reviewer"},
	}
}

// TestRunnerReadsNormalisedContract: the values the runner applies to a task with a
// raw contract are those of the contract's normalised form, never defaults of the
// runner's own.
func TestRunnerReadsNormalisedContract(t *testing.T) {
	task := &models.Task{ID: 7, Contract: rawContract()}
	want := task.Contract.Normalized()
	if want.Completion.MaxAttempts != contract.DefaultMaxAttempts || len(want.Review.When) == 0 {
		t.Fatalf("the contract's normalised form is not what this test assumes: %+v", want)
	}
	if got := attemptBudget(task); got != want.Completion.MaxAttempts {
		t.Errorf("attempt budget %d, the contract's %d", got, want.Completion.MaxAttempts)
	}
	if got := attemptTimeout(task); got != want.Completion.Timeout.Duration {
		t.Errorf("attempt timeout %v, the contract's %v", got, want.Completion.Timeout.Duration)
	}
	cp := expandedCompletion(task)
	if cp.VerifyTimeout != want.Completion.VerifyTimeout || cp.Type != want.Completion.Type || cp.Path != "out/7.md" {
		t.Errorf("completion %+v, want the contract's verify_timeout %v and type %s, path out/7.md",
			cp, want.Completion.VerifyTimeout, want.Completion.Type)
	}
	rv := effectiveReview(task.Contract.Review)
	if rv.MaxRounds != want.Review.MaxRounds || !slices.Equal(rv.When, want.Review.When) {
		t.Errorf("review %+v, the contract's %+v", rv, want.Review)
	}
	if task.Contract.Completion.MaxAttempts != 0 || len(task.Contract.Review.When) != 0 {
		t.Errorf("reading the effective values changed the task's contract: %+v", task.Contract)
	}
	if effectiveReview(nil) != nil {
		t.Error("no review became one")
	}
}

// TestRawContractGetsDefaultAttempts: a task stored with a raw contract (no
// max_attempts) gets contract.DefaultMaxAttempts attempts, as its brief says: the
// first fails, the revision passes. With the runner's old fallback (an unset budget
// meant one attempt) it was blocked after the first.
func TestRawContractGetsDefaultAttempts(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "fixes.sh"))
			task := h.task("fix it raw", "developer", fileContract())
			raw := rawContract()
			raw.Review = nil // no reviewer here: the attempt budget alone is under test
			task.Contract = raw
			must(t, h.db.UpdateTask(h.ctx, task)) // bypasses the service's normalisation
			stored, err := h.db.GetTask(h.ctx, task.ID)
			must(t, err)
			if stored.Contract.Completion.MaxAttempts != 0 {
				t.Fatalf("stored max_attempts %d, want the raw 0", stored.Contract.Completion.MaxAttempts)
			}
			h.start()
			got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
			atts := h.attempts(task.ID)
			if got.State != models.TaskVerified || len(atts) != contract.DefaultMaxAttempts {
				t.Fatalf("state %s after %d attempts, want verified after %d (the contract's default budget); attempts %+v",
					got.State, len(atts), contract.DefaultMaxAttempts, atts)
			}
		})
	}
}
