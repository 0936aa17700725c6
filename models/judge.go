package models

import (
	"github.com/countersign/countersign/models/contract"
	"strings"
)

// StageTamper is the stage of an attempt whose verification failed in the judge's
// view after the worker had changed protected paths (tests, test configuration): the
// restored tests failed, so what passed in the worker's own workspace passed by its
// changes to them.
const StageTamper = "tamper"

// The judge's view: verify commands and criteria run on the worker's result with the
// protected paths as they were at the task's base revision and the held-out tests
// added. Verification.Protect adds to the protected paths of the project rules'
// stacks; TestsMayChange skips the restore (for tasks whose job is to write tests)
// but keeps the report and the test floor.

// JudgeReport is what the judge found on one attempt: the protected paths the worker
// changed, whether they were restored for the verify commands, the test floor, and the
// held-out tests. It is data on the attempt, shown on the task page, and summarised as
// counts on the ledger.
type JudgeReport struct {
	// Base names the base revision the protected paths were restored from: a git
	// commit, or "snapshot" for a workspace that is not a git repository.
	Base string `json:"base,omitempty"`
	// View says how the judge's view was made: "overlay" (a mount over the base's
	// environment) or "copy".
	View string `json:"view,omitempty"`
	// Protected lists every protected file the worker added, changed or deleted.
	Protected []ProtectedChange `json:"protected,omitempty"`
	// Restored says the verify commands ran with the protected paths restored (false
	// when the contract lets the tests change).
	Restored bool `json:"restored"`
	// Floor is the test floor, when a criterion's test runner reports structured
	// results.
	Floor *TestFloor `json:"floor,omitempty"`
	// HeldOut is how the held-out tests did: their count and how many failed for
	// everyone; which failed and why only for those who may read held-out tests
	// (ForReader).
	HeldOut *HeldOutReport `json:"held_out,omitempty"`
	// Canary is how the judge's canary tests did in each run with structured results,
	// and says so for a run that carried none.
	Canary []CanaryStatus `json:"canary,omitempty"`
	// Dependencies lists the dependencies the candidate changed, one entry each
	// ("package.json: chai ^4.3.0 -> file:../fake-chai (a local path)"), when the
	// contract lets them change (Verification.DependenciesMayChange) and the judge
	// installed them itself; see runner/judge.ChangedDependencies.
	Dependencies []string `json:"dependencies,omitempty"`
	// PrepareMS is how long preparing the judge's view took.
	PrepareMS int64 `json:"prepare_ms"`
	// Tree is the git tree id of the candidate the checks judged: the worker's result
	// fixed as a commit in the judge's store before any check ran. A verified task
	// lands exactly this tree, and task.complete names it.
	Tree string `json:"tree,omitempty"`
}

// CanaryStatus is the judge's canary pair in one run of a test runner with structured
// results: a test that must fail and one that must pass, named afresh per run. A run
// that reports them otherwise than they ran was tampered with.
type CanaryStatus struct {
	// Criterion is the index of the contract's criterion whose run this was; -1 for
	// the verification as a whole (no criterion reports structured results).
	Criterion int `json:"criterion"`
	// Kind is the canary the runner carries (go, pytest, node-test, jest, vitest,
	// mocha); empty when it carries none.
	Kind string `json:"kind,omitempty"`
	// Status is CanaryHeld, CanaryTampered or CanaryNone.
	Status string `json:"status"`
	// Detail says what was seen, or why the run carried no canary.
	Detail string `json:"detail,omitempty"`
}

// The statuses of a CanaryStatus.
const (
	CanaryHeld     = "held"     // both canaries reported as they ran
	CanaryTampered = "tampered" // a canary missing, or the must-fail one not failed
	CanaryNone     = "none"     // the runner, or the workspace, carries no canary
)

// ProtectedChange is one protected file the worker added, changed or deleted (or, for
// a partial rule like package.json#scripts, the parts of it that it changed).
type ProtectedChange struct {
	Path   string   `json:"path"`
	Change string   `json:"change"`          // added | changed | deleted
	Parts  []string `json:"parts,omitempty"` // for a file protected in part: the parts changed
	Diff   string   `json:"diff,omitempty"`  // a short diff, bounded
}

// The changes a ProtectedChange records.
const (
	ChangeAdded   = "added"
	ChangeChanged = "changed"
	ChangeDeleted = "deleted"
)

// TestFloor holds the judge's run to the tests that passed at the base revision:
// every one of them must run and pass.
type TestFloor struct {
	AtBase  int      `json:"at_base"` // tests that passed at the base revision
	Run     int      `json:"run"`     // tests the judge's run reported
	Passed  int      `json:"passed"`  // of AtBase, passed again
	Skipped int      `json:"skipped"` // of AtBase, skipped
	Missing int      `json:"missing"` // of AtBase, not reported at all
	Failed  int      `json:"failed"`  // of AtBase, failed
	NotRun  []string `json:"not_run,omitempty"`
	OK      bool     `json:"ok"`
}

// HeldOutReport is how the held-out tests did in the judge's view. Files, Passed and
// FailedCount are what a worker may know; Failed and Detail name the tests, their
// inputs and expected values, and are kept for the people who may read held-out
// tests (admin, editor, lead): Redacted drops them for everyone else.
type HeldOutReport struct {
	Files       int  `json:"files"`
	Passed      bool `json:"passed"`
	FailedCount int  `json:"failed_count,omitempty"`
	// NotRun counts the tests the held-out files define that no run reported run.
	NotRun int `json:"not_run,omitempty"`
	// Failed names the failed held-out tests with the first line of each message:
	// "TestAddLarge: Add(10, 4) = 6, want 14".
	Failed []string `json:"failed,omitempty"`
	// Detail is what the diagnosis withheld from the worker: the failing command's
	// failed tests with their whole messages and its last output, bounded.
	Detail string `json:"detail,omitempty"`
}

// maxHeldOutDetail bounds HeldOutReport.Detail.
const maxHeldOutDetail = 16 << 10

// SetDetail keeps d as the report's Detail, bounded.
func (h *HeldOutReport) SetDetail(d string) { h.Detail = contract.Truncate(d, maxHeldOutDetail) }

// Redacted returns the report without what only the people who may read held-out
// tests see (the held-out tests' names, messages and the withheld output); nil stays
// nil. r itself is not changed.
func (r *JudgeReport) Redacted() *JudgeReport {
	if r == nil || r.HeldOut == nil {
		return r
	}
	cp := *r
	ho := *r.HeldOut
	if ho.FailedCount == 0 {
		ho.FailedCount = len(ho.Failed) // a report from before the count was kept
	}
	ho.Failed, ho.Detail = nil, ""
	cp.HeldOut = &ho
	return &cp
}

// ForReader returns the attempt as reader may see it: its judge's report Redacted
// unless reader may read held-out tests (Task.ForReader's rule). The worker-facing
// fields (diagnosis, checks, criteria) never hold them in the first place.
func (a Attempt) ForReader(reader *Agent) Attempt {
	if mayReadHeldOut(reader) {
		return a
	}
	a.Judge = a.Judge.Redacted()
	return a
}

// AttemptsForReader returns attempts as reader may see them (Attempt.ForReader), in a
// new slice; nil stays nil.
func AttemptsForReader(reader *Agent, attempts []Attempt) []Attempt {
	if attempts == nil {
		return nil
	}
	out := make([]Attempt, len(attempts))
	for i, a := range attempts {
		out[i] = a.ForReader(reader)
	}
	return out
}

// mayReadHeldOut reports whether reader reads held-out tests: an admin, editor or
// lead not acting through an attempt token, or the runner.
func mayReadHeldOut(reader *Agent) bool {
	return reader != nil && (mayWriteCommands(reader) || reader.IsRunner()) && reader.Scope == nil
}

// ChangedTests reports whether the worker changed any protected file.
func (r *JudgeReport) ChangedTests() bool { return r != nil && len(r.Protected) > 0 }

// ProtectedList names the changed protected files for a diagnosis: "calc_test.go
// (changed), zz_main_test.go (added)".
func (r *JudgeReport) ProtectedList() string {
	var parts []string
	for _, c := range r.Protected {
		s := c.Path + " (" + c.Change
		if len(c.Parts) > 0 {
			s += ": " + strings.Join(c.Parts, ", ")
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}

// ForReader returns the task as reader may see it: its contract Redacted unless
// reader may set held-out tests (admin, editor, lead) or is a runner.
func (t Task) ForReader(reader *Agent) Task {
	if mayReadHeldOut(reader) {
		return t
	}
	t.Contract = t.Contract.Redacted()
	return t
}
