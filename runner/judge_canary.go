package runner

import (
	"fmt"
	"sort"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/checks/testresults"
	"github.com/countersign/countersign/runner/judge"
)

// canaryOff switches the canary check off, and heldOutNotRunOff the check that every
// held-out test ran: for the tests that show what each catches.
var canaryOff, heldOutNotRunOff bool

// judgeCanaries is the canary pairs of one judged run: per criterion with structured
// results, and the run's nonce.
type judgeCanaries struct {
	nonce string
	by    map[int]judge.Canaries // criterion index → its canaries
}

// newCanaries makes the canary files of a judged run in the view at root: one pair per
// criterion with structured results (criteria of the same runner share a file),
// beside the protected and held-out test files. The files go into the view as the
// held-out tests do.
func (jr *judgeRun) newCanaries(root string, heldOut []contract.HeldOutTest) []contract.HeldOutTest {
	if canaryOff {
		return nil
	}
	if len(jr.results) == 0 {
		jr.report.Canary = []models.CanaryStatus{{Criterion: -1, Status: models.CanaryNone,
			Detail: "no criterion's test runner reports structured results, so no run carries a canary: the run's honesty is not checked"}}
		return nil
	}
	testFiles := judge.TestFiles(jr.testFiles, heldOut)
	jc := &judgeCanaries{nonce: judge.NewNonce(), by: map[int]judge.Canaries{}}
	var out []contract.HeldOutTest
	written := map[string]bool{}
	for _, i := range sortedKeys(jr.results) {
		files, c := judge.NewCanaries(jc.nonce, jr.results[i], root, testFiles)
		jc.by[i] = c
		for _, f := range files {
			if !written[f.Rel] {
				written[f.Rel] = true
				out = append(out, contract.HeldOutTest{Path: f.Rel, Content: string(f.Content)})
			}
		}
	}
	jr.canaries = jc
	return out
}

func sortedKeys(m map[int]contract.TestResults) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// expect tells the verify run which failures are the canaries' (nil: none).
func (jc *judgeCanaries) expect() *checks.ExpectedFailures {
	if jc == nil {
		return nil
	}
	return &checks.ExpectedFailures{
		Env: []string{judge.EnvCanary + "=" + jc.nonce},
		Fail: func(name string) bool {
			for _, c := range jc.by {
				if c.ExpectedFailure(name) {
					return true
				}
			}
			return false
		},
	}
}

// check holds each run to its canaries and records how they did. It returns the
// diagnosis of the first run that was tampered with: a canary reported otherwise
// than it ran when the run passed, or the must-fail canary not reported failed at all.
func (jc *judgeCanaries) check(runs []checks.TestRun, passed bool, report *models.JudgeReport) (string, bool) {
	if jc == nil {
		return "", false
	}
	tampered := ""
	for _, run := range runs {
		c, ok := jc.by[run.Criterion]
		if !ok {
			continue
		}
		st := models.CanaryStatus{Criterion: run.Criterion, Kind: c.Kind}
		held, diag := c.Check(run.Report)
		switch {
		case c.Kind == "":
			st.Status, st.Detail = models.CanaryNone, c.Reason
		case held:
			st.Status = models.CanaryHeld
		case passed || c.FailReportedNotFailed(run.Report):
			st.Status, st.Detail = models.CanaryTampered, diag
			if tampered == "" {
				tampered = diag
			}
		default:
			// The run failed on its own (a build error can take the canary's package
			// with it): a missing canary is not proof of tampering then.
			st.Status, st.Detail = models.CanaryHeld, "not checked: the run failed ("+diag+")"
		}
		report.Canary = append(report.Canary, st)
	}
	return tampered, tampered != ""
}

// heldOutNames are the names of the tests the held-out files define.
func heldOutNames(heldOut []contract.HeldOutTest) []string {
	var names []string
	for _, h := range heldOut {
		names = append(names, testresults.DefinedTests(h.Path, h.Content)...)
	}
	return names
}

// heldOutNotRun counts the held-out tests no run reported run (nothing failed, but
// nothing ran: the code under test narrowed the selection, or the run ended early).
// With no structured results there is nothing to count in.
func heldOutNotRun(runs []checks.TestRun, heldOut []contract.HeldOutTest) int {
	if len(runs) == 0 || heldOutNotRunOff {
		return 0
	}
	reports := make([]testresults.Report, len(runs))
	for i, r := range runs {
		reports[i] = r.Report
	}
	return len(testresults.NotRun(heldOutNames(heldOut), reports...))
}

// heldOutNotRunDiagnosis says that held-out tests did not run, by count only: their
// names must not reach the worker.
func heldOutNotRunDiagnosis(n int) string {
	return fmt.Sprintf("%d held-out test(s) did not run: every held-out test must be reported run and passed", n)
}
