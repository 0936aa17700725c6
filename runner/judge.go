package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/checks/testresults"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/judge/fileparts"
)

// judgeRun is the judge's part of one attempt: the protect rules, the base, the
// base's test results for the floor, and what the judge's view found.
type judgeRun struct {
	rules      []judge.Rule
	base       *judge.Base
	dir        string                      // <meta>/judge
	results    map[int]models.TestResults  // criterion index → its structured-results command
	atBase     map[int]*testresults.Report // criterion index → results at the base revision
	activities map[string]string           // the project rules' activity commands
	report     models.JudgeReport
	view       *judge.View
	opened     bool           // the view was prepared: the report is the attempt's
	canaries   *judgeCanaries // the run's canary pairs, set when the view opens
}

// judgeDir is where the judge keeps a task's base and journal: under the task's meta
// dir, which workers may read but not write.
func judgeDir(ar *attemptRun) string { return filepath.Join(ar.ws.MetaDir, "judge") }

// prepareJudge readies the judge for an attempt before its worker runs: it puts back
// what a view left open by a runner that died, takes the base (protected files as
// the first attempt found them) and runs the base's tests for the floor, once per
// base revision. Advisory tasks run no verify commands and get no judge.
func (p *Pool) prepareJudge(ctx context.Context, tr *taskRun, ar *attemptRun) error {
	t := &tr.task
	if t.Contract.Verification.Type == models.VerifyAdvisory || !runsCommands(&t.Contract) {
		return nil
	}
	dir := judgeDir(ar)
	if err := judge.Recover(filepath.Join(dir, "journal"), ar.ws.Dir); err != nil {
		return fmt.Errorf("putting back the worker's files after an interrupted check: %w", err)
	}
	rules, err := p.rules(ctx)
	if err != nil {
		return err
	}
	jr := &judgeRun{rules: judge.ParseRules(rules.ProtectedFor(t.Contract.Verification)), dir: dir,
		results: map[int]models.TestResults{}, atBase: map[int]*testresults.Report{}, activities: rules.Activities}
	start := time.Now()
	base, err := judge.LoadBase(filepath.Join(dir, "base"))
	if err != nil {
		return err
	}
	first := base == nil
	var commit string
	var clean bool
	if first {
		if commit, clean, err = p.cfg.Workspaces.Revision(ctx, ar.ws); err != nil {
			return err
		}
		// Taken before the first worker runs; a task that began under an older
		// version takes it now, from what its earlier attempts left.
		rev := commit
		if rev == "" {
			rev = "snapshot"
		}
		if base, err = judge.TakeBase(filepath.Join(dir, "base"), ar.ws.Dir, rev, jr.rules); err != nil {
			return err
		}
	}
	jr.base = base
	jr.report.Base = base.Revision
	var facts *models.WorkspaceFacts // read once, and only for a criterion of a stack
	for i, c := range t.Contract.Verification.Criteria {
		if c.Timing == models.TimingDeferred || c.Stack == "" {
			continue
		}
		if facts == nil {
			f, err := models.DetectWorkspace(ar.ws.Dir, nil)
			if err != nil {
				return err
			}
			facts = &f
		}
		if res, ok := rules.TestResultsFor(c, *facts); ok {
			jr.results[i] = res
		}
	}
	if err := p.baseResults(ctx, tr, ar, jr, first, commit, clean); err != nil {
		return err
	}
	jr.report.PrepareMS = time.Since(start).Milliseconds()
	ar.judge = jr
	return nil
}

// baseResults loads or records the base's test results of each criterion with
// structured results. They are recorded by running the results command in the
// workspace before the first worker has touched it, and kept with the task; when the
// workspace is a clean git checkout they are kept by commit too, and any task based
// on the same commit reuses them. A later attempt without them (a task begun under an
// older version) has no floor.
func (p *Pool) baseResults(ctx context.Context, tr *taskRun, ar *attemptRun, jr *judgeRun, first bool, commit string, clean bool) error {
	for i, res := range jr.results {
		key := resultsKey(res)
		own := filepath.Join(jr.dir, "base-results-"+key+".json")
		shared := ""
		if commit != "" && clean {
			shared = filepath.Join(p.cfg.Workspaces.Root(), "judge", "results", commit+"-"+key+".json")
		}
		if rep, ok := loadReport(own); ok {
			jr.atBase[i] = rep
			continue
		}
		if !first {
			continue
		}
		if rep, ok := loadReport(shared); ok && shared != "" {
			jr.atBase[i] = rep
			_ = saveReport(own, rep)
			continue
		}
		c := tr.task.Contract.Verification.Criteria[i]
		_, _, runs := checks.VerifyWith(ctx, checks.VerifyRequest{Dir: ar.ws.Dir, Criteria: []models.Criterion{c},
			Results: map[int]models.TestResults{0: res}, ResultsDir: ar.tmp,
			Timeout: tr.task.Contract.Completion.VerifyTimeout.Duration, Env: p.checkEnv(tr, ar),
			Confine: p.confinement(tr, ar, &tr.agent)})
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if len(runs) == 0 || (runs[0].Err != nil && len(runs[0].Report.Results) == 0) {
			continue // no results at base: no floor for this criterion
		}
		rep := runs[0].Report
		jr.atBase[i] = &rep
		if err := saveReport(own, &rep); err != nil {
			return err
		}
		if shared != "" {
			_ = saveReport(shared, &rep)
		}
	}
	return nil
}

func resultsKey(res models.TestResults) string {
	sum := sha256.Sum256([]byte(res.Format + "\x00" + res.Command))
	return hex.EncodeToString(sum[:8])
}

func loadReport(path string) (*testresults.Report, bool) {
	if path == "" {
		return nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var rep testresults.Report
	if json.Unmarshal(b, &rep) != nil {
		return nil, false
	}
	return &rep, true
}

func saveReport(path string, rep *testresults.Report) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// openView turns the workspace into the judge's view before the verify commands run,
// and records what it found. A protected path the judge cannot restore (the worker
// put a link where a directory was) fails the attempt at stage tamper; anything else
// going wrong is the runner's failure. It reports whether verification may go on.
func (p *Pool) openView(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	jr := ar.judge
	if jr == nil {
		return true
	}
	v := &tr.task.Contract.Verification
	start := time.Now()
	view, changes, err := judge.Open(ar.ws.Dir, jr.base, jr.rules, judge.Options{
		Restore: !v.TestsMayChange, HeldOut: append(slices.Clone(v.HeldOut), jr.newCanaries(ar.ws.Dir, v.HeldOut)...), Parts: fileparts.Restore,
		Names: partNames(contractCommands(&tr.task.Contract, jr.activities)), Journal: filepath.Join(jr.dir, "journal"),
	})
	jr.report.PrepareMS += time.Since(start).Milliseconds()
	var blocked *judge.BlockedError
	switch {
	case errors.As(err, &blocked):
		ar.record(models.CheckResult{Stage: models.StageTamper, Verdict: models.VerdictFail,
			Diagnosis:  blocked.Error() + "; protected paths must stay as they are: " + strings.Join(judgeRulesText(jr.rules), ", "),
			DurationMS: time.Since(start).Milliseconds()})
		return false
	case err != nil:
		ar.infra("preparing the judge's view failed: "+err.Error(), err)
		return false
	}
	jr.view, jr.opened = view, true
	jr.report.Protected = changes
	jr.report.Restored = !v.TestsMayChange
	if len(v.HeldOut) > 0 {
		jr.report.HeldOut = &models.HeldOutReport{Files: len(v.HeldOut)}
	}
	return true
}

// closeView puts the worker's versions back; failing to is the runner's failure (the
// journal keeps them for the next attempt's prepareJudge).
func (p *Pool) closeView(ar *attemptRun) {
	if ar.judge == nil || ar.judge.view == nil {
		return
	}
	if err := ar.judge.view.Close(); err != nil {
		ar.infra("putting back the worker's files after the checks failed: "+err.Error(), err)
	}
	ar.judge.view = nil
}

func judgeRulesText(rules []judge.Rule) []string {
	var out []string
	for _, r := range rules {
		s := r.Glob
		if r.Part != "" {
			s += "#" + r.Part
		}
		out = append(out, s)
	}
	return out
}

// contractCommands are the commands a contract runs, for the package.json scripts and
// Makefile targets protected in part.
func contractCommands(c *models.Contract, activities map[string]string) []string {
	cmds := slices.Clone(c.Completion.Verify)
	for _, cr := range c.Verification.Criteria {
		if cr.Command != "" {
			cmds = append(cmds, cr.Command)
		} else if a := activities[cr.Activity]; a != "" {
			cmds = append(cmds, a)
		}
	}
	return cmds
}

// judgeVerdict applies the floor and the held-out report to the verify stage's
// result r, given the structured results of its run, and names a failure of restored
// tests as tamper.
func (ar *attemptRun) judgeVerdict(r models.CheckResult, runs []checks.TestRun, heldOut []models.HeldOutTest) models.CheckResult {
	jr := ar.judge
	if jr == nil || r.Verdict == models.VerdictError {
		return r
	}
	ran := r.Verdict == models.VerdictPass // the commands' own verdict, before the floor
	var floors []testresults.FloorResult
	for _, run := range runs {
		base := jr.atBase[run.Criterion]
		if base == nil {
			continue
		}
		floors = append(floors, testresults.Floor(*base, run.Report))
	}
	if len(floors) > 0 {
		f := floors[0]
		for _, g := range floors[1:] {
			f = mergeFloors(f, g)
		}
		jr.report.Floor = &models.TestFloor{AtBase: f.AtBase, Run: f.Run, Passed: f.Passed, Skipped: f.Skipped,
			Missing: f.Missing, Failed: f.Failed, NotRun: f.NotRun, OK: f.OK()}
		if !f.OK() && r.Verdict == models.VerdictPass {
			r.Verdict, r.Diagnosis = models.VerdictFail, "the test floor does not hold: "+f.Diagnosis()
		}
	}
	if ho := jr.report.HeldOut; ho != nil {
		ho.Failed = heldOutFailures(runs, heldOut)
		if ho.NotRun = heldOutNotRun(runs, heldOut); ho.NotRun > 0 && r.Verdict == models.VerdictPass {
			r.Verdict, r.Diagnosis = models.VerdictFail, heldOutNotRunDiagnosis(ho.NotRun)
		}
		ho.Passed = r.Verdict == models.VerdictPass
		if len(ho.Failed) > 0 {
			r.Diagnosis = "held-out tests failed: " + strings.Join(ho.Failed, "; ") + "\n" + r.Diagnosis
		}
	}
	if diag, tampered := jr.canaries.check(runs, ran, &jr.report); tampered {
		r.Stage, r.Verdict, r.Diagnosis = models.StageTamper, models.VerdictFail, diag
		return r
	}
	if r.Verdict == models.VerdictFail && jr.report.ChangedTests() && jr.report.Restored {
		r.Stage = models.StageTamper
		r.Diagnosis = fmt.Sprintf("you changed protected test files: %s. The checks ran with them as they were at the base revision (%s), and then: %s",
			jr.report.ProtectedList(), shortRevision(jr.report.Base), r.Diagnosis)
	}
	return r
}

func mergeFloors(a, b testresults.FloorResult) testresults.FloorResult {
	a.AtBase += b.AtBase
	a.Run += b.Run
	a.Passed += b.Passed
	a.Skipped += b.Skipped
	a.Missing += b.Missing
	a.Failed += b.Failed
	a.NotRun = append(a.NotRun, b.NotRun...)
	a.FailedNames = append(a.FailedNames, b.FailedNames...)
	return a
}

func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// heldOutFailures lists the failed tests of runs that the held-out files define, each
// with the first line of its message: what the revision brief may carry.
func heldOutFailures(runs []checks.TestRun, heldOut []models.HeldOutTest) []string {
	names := heldOutNames(heldOut)
	var out []string
	for _, run := range runs {
		for _, res := range run.Report.Results {
			if res.Status != testresults.StatusFail || !definesTest(names, res.Name) {
				continue
			}
			msg, _, _ := strings.Cut(strings.TrimSpace(res.Message), "\n")
			out = append(out, strings.TrimSpace(models.Truncate(res.Name+": "+msg, 240)))
		}
	}
	return out
}

// definesTest reports whether a result's fully qualified name is one of names: the
// name is its last element (pkg.TestX, file::test_x, suite > case) or a subtest's parent.
func definesTest(names []string, full string) bool {
	for _, n := range names {
		if testresults.Defines(n, full) {
			return true
		}
	}
	return false
}

// partNames are the package.json scripts and Makefile targets the commands run: the
// names the parts "scripts" and "targets" protect.
func partNames(cmds []string) []string {
	return append(fileparts.ScriptsRun(cmds), fileparts.TargetsRun(cmds)...)
}

// runsCommands reports whether verification runs anything in the workspace: verify
// commands, immediate criteria or held-out tests. Without any there is nothing for a
// judge's view to judge.
func runsCommands(c *models.Contract) bool {
	if len(c.Completion.Verify) > 0 || len(c.Verification.HeldOut) > 0 {
		return true
	}
	for _, cr := range c.Verification.Criteria {
		if cr.Timing != models.TimingDeferred {
			return true
		}
	}
	return false
}
