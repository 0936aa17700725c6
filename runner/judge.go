package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/checks/testresults"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/judge/fileparts"
	"github.com/countersign/countersign/runner/workspace"
)

// judgeRun is the judge's part of one attempt: the task's base, the attempt's
// candidate, the protect rules, the base's test results for the floor, and what the
// judge's view found.
type judgeRun struct {
	base       judgeBase
	cand       *judge.Snapshot // the attempt's result, once the worker is gone
	commands   bool            // the contract runs commands: there is an Env and a view
	rules      []judge.Rule
	dir        string                       // <meta>/judge
	results    map[int]contract.TestResults // criterion index → its structured-results command
	atBase     map[int]*testresults.Report  // criterion index → results at the base revision
	activities map[string]string            // the project rules' activity commands
	report     models.JudgeReport
	view       *judge.TreeView
	opened     bool // the view was prepared: the report is the attempt's
	// held says which tests are held out (nil without held-out tests); withheld is
	// what the failing check's diagnosis kept from the worker, for the report.
	held     *checks.Withholding
	heldOut  []contract.HeldOutTest
	withheld string
	canaries *judgeCanaries // the run's canary pairs, set when the view opens
	// testFiles are the base's files the rules protect whole: where canaries go.
	testFiles []string
	// installDir is where the judge installed a candidate's changed Python
	// dependencies (judge_deps.go): on the judged runs' PYTHONPATH.
	installDir string
}

// judgeDir is where the judge keeps a task's base, its views and its results: under
// the task's meta dir, which workers may read but not write.
func judgeDir(ar *attemptRun) string { return filepath.Join(ar.ws.MetaDir, "judge") }

// prepareJudge readies the judge for an attempt before its worker runs: the task's
// base snapshot (and Env, when the contract runs commands), taken before the first
// worker ran, and the base's tests for the floor, run once per base in a view of the
// base. A task that runs no commands and lands nothing needs no judge.
func (p *judging) prepareJudge(ctx context.Context, tr *taskRun, ar *attemptRun) error {
	t := &tr.task
	commands := t.Contract.Verification.Type != contract.VerifyAdvisory && runsCommands(&t.Contract)
	reviewed := t.Contract.Review != nil
	if !commands && !reviewed && ar.ws.Branch() == "" {
		return nil
	}
	start := time.Now()
	base, first, err := p.judgeBaseOf(ctx, tr, ar, commands || reviewed)
	if err != nil {
		return err
	}
	jr := &judgeRun{base: base, commands: commands, dir: judgeDir(ar),
		results: map[int]contract.TestResults{}, atBase: map[int]*testresults.Report{}}
	jr.report.Base = base.Revision
	if !commands {
		ar.judge = jr
		return nil
	}
	rules, err := p.rules(ctx)
	if err != nil {
		return err
	}
	jr.activities = rules.Activities
	// What the contract's protected recipes and scripts run is protected too, read
	// from the base (the judge's Env of it), never from the candidate.
	protect := append(rules.ProtectedFor(t.Contract.Verification),
		fileparts.FilesRun(contractCommands(&t.Contract, jr.activities), envReader(base.Env))...)
	jr.rules = judge.ParseRules(protect)

	paths, err := p.judgeStore.Paths(ctx, base.Commit)
	if err != nil {
		return err
	}
	jr.testFiles = judge.Protected(paths, jr.rules)
	var facts *contract.WorkspaceFacts // read once, and only for a criterion of a stack
	for i, c := range t.Contract.Verification.Criteria {
		if c.Timing == contract.TimingDeferred || c.Stack == "" {
			continue
		}
		if facts == nil {
			f, err := contract.DetectWorkspace(base.Env, nil)
			if err != nil {
				return err
			}
			facts = &f
		}
		if res, ok := rules.TestResultsFor(c, *facts); ok {
			jr.results[i] = res
		}
	}
	if first {
		p.prepareGo(ctx, tr, ar.ws.Dir, rules.Stacks)
	}
	if err := p.baseResults(ctx, tr, ar, jr, first, rules.Stacks); err != nil {
		return err
	}
	jr.report.PrepareMS = time.Since(start).Milliseconds()
	ar.judge = jr
	return nil
}

// baseResults loads or records the base's test results of each criterion with
// structured results. They are recorded by running the results command in a view of
// the base itself, with the judge's environment, when the base is taken, and kept with
// the task; when the workspace was a clean git checkout they are kept by commit too,
// and any task based on the same commit reuses them. A later attempt without them (a
// task begun under an older version) has no floor.
func (p *judging) baseResults(ctx context.Context, tr *taskRun, ar *attemptRun, jr *judgeRun, first bool, stacks []contract.Stack) error {
	var view *judge.TreeView
	defer func() {
		if view != nil {
			_ = view.Close()
		}
	}()
	for i, res := range jr.results {
		key := resultsKey(res)
		own := filepath.Join(jr.dir, "base-results-"+key+".json")
		shared := ""
		if jr.base.Revision != "snapshot" && jr.base.Clean {
			shared = filepath.Join(p.cfg.Workspaces.Root(), "judge", "results", jr.base.Revision+"-"+key+".json")
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
		if view == nil {
			v, _, err := judge.OpenView(ctx, judge.ViewRequest{Env: jr.base.Env, Dir: filepath.Join(jr.dir, "view"),
				Trees: p.judgeStore, Base: jr.base.Commit, Candidate: jr.base.Commit})
			if err != nil {
				return fmt.Errorf("opening the judge's view of the base: %w", err)
			}
			view = v
		}
		c := tr.task.Contract.Verification.Criteria[i]
		run, err := p.judged(tr, ar, view.Root(), stacks)
		if err != nil {
			return err
		}
		_, _, runs := checks.VerifyWith(ctx, checks.VerifyRequest{Dir: view.Root(), Criteria: []contract.Criterion{c},
			Results: map[int]contract.TestResults{0: res}, ResultsDir: run.resultsDir,
			Timeout: expandedCompletion(&tr.task).VerifyTimeout.Duration, Env: run.env, Confine: run.confine})
		run.close()
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

func resultsKey(res contract.TestResults) string {
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

// openView opens the judge's view of the attempt's candidate before the verify
// commands run, and records what it found: the Env of the base, every change the
// candidate made except to protected paths (which keep the base's version unless
// tests_may_change), and the held-out tests. A protected path the judge cannot restore
// fails the attempt at stage tamper; anything else going wrong is the runner's failure.
// It reports whether verification may go on.
func (p *judging) openView(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	jr := ar.judge
	if jr == nil || !jr.commands {
		return true
	}
	if jr.cand == nil {
		ar.infra("the judge has no candidate to judge", nil)
		return false
	}
	v := &tr.task.Contract.Verification
	start := time.Now()
	var extra []judge.File
	for _, h := range v.HeldOut {
		extra = append(extra, judge.File{Rel: h.Path, Content: []byte(h.Content)})
	}
	for _, c := range jr.newCanaries(jr.base.Env, v.HeldOut) {
		extra = append(extra, judge.File{Rel: c.Path, Content: []byte(c.Content)})
	}
	view, changes, err := judge.OpenView(ctx, judge.ViewRequest{Env: jr.base.Env, Dir: filepath.Join(jr.dir, "view"),
		Trees: p.judgeStore, Base: jr.base.Commit, Candidate: jr.cand.Commit, Rules: jr.rules, Restore: !v.TestsMayChange,
		Parts: fileparts.Restore, Names: partNames(contractCommands(&tr.task.Contract, jr.activities)), Extra: extra})
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
	if err := p.viewGit(ctx, ar, view.Root()); err != nil {
		ar.infra("giving the judge's view its git repository failed: "+err.Error(), err)
		return false
	}
	jr.report.Protected = changes
	jr.report.Restored = !v.TestsMayChange
	jr.report.View = view.Mechanism()
	if len(v.HeldOut) > 0 {
		jr.report.HeldOut = &models.HeldOutReport{Files: len(v.HeldOut)}
	}
	return true
}

// closeView removes the judge's view; failing to is logged (the next view of the task
// removes what is left, and a starting runner removes every view a dead one left).
func (p *judging) closeView(ar *attemptRun) {
	if ar.judge == nil || ar.judge.view == nil {
		return
	}
	if err := ar.judge.view.Close(); err != nil {
		p.log.Warn("removing the judge's view failed", "dir", ar.judge.dir, "err", err)
	}
	ar.judge.view = nil
}

// verifyDir is where the verify commands run: the judge's view when there is one.
func verifyDir(ar *attemptRun) string {
	if ar.judge != nil && ar.judge.view != nil {
		return ar.judge.view.Root()
	}
	return ar.ws.Dir
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
func contractCommands(c *contract.Contract, activities map[string]string) []string {
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
// tests as tamper. Of the held-out tests the diagnosis says how many failed, never
// which: the report keeps that for people.
func (ar *attemptRun) judgeVerdict(r models.CheckResult, runs []checks.TestRun) models.CheckResult {
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
			r.Verdict, r.Diagnosis = models.VerdictFail, "the test floor does not hold: "+withoutHeldOut(f, jr.held).Diagnosis()
		}
	}
	if ho := jr.report.HeldOut; ho != nil {
		// The names and messages are for people; the worker learns the number.
		ho.Failed = heldOutFailures(runs, jr.held)
		ho.FailedCount = len(ho.Failed)
		if ho.NotRun = heldOutNotRun(runs, jr.heldOut); ho.NotRun > 0 && r.Verdict == models.VerdictPass {
			r.Verdict, r.Diagnosis = models.VerdictFail, heldOutNotRunDiagnosis(ho.NotRun)
		}
		ho.Passed = r.Verdict == models.VerdictPass
		ho.SetDetail(jr.withheld)
		if ho.FailedCount > 0 && !strings.Contains(r.Diagnosis, "held-out test(s) failed") {
			r.Diagnosis = checks.HeldOutFailed(ho.FailedCount) + "\n" + r.Diagnosis
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

// withhold makes req keep the held-out tests' names and output from the worker, and
// keeps what it withheld for the report.
func (jr *judgeRun) withhold(req *checks.VerifyRequest, heldOut []contract.HeldOutTest) {
	if len(heldOut) == 0 {
		return
	}
	jr.held, jr.heldOut = checks.NewWithholding(heldOut), heldOut
	req.Withhold, req.HeldOut = true, heldOut
	req.Withheld = func(d string) { jr.withheld = d }
}

// heldOutFailures lists the failed tests of runs that are held out, each with the
// first line of its message: for the people who may read held-out tests, never for
// the worker.
func heldOutFailures(runs []checks.TestRun, held *checks.Withholding) []string {
	var out []string
	for _, run := range runs {
		for _, res := range run.Report.Results {
			if res.Status != testresults.StatusFail || !held.Defines(res.Name) {
				continue
			}
			msg, _, _ := strings.Cut(strings.TrimSpace(res.Message), "\n")
			out = append(out, strings.TrimSpace(contract.Truncate(res.Name+": "+msg, 240)))
		}
	}
	return out
}

// withoutHeldOut is f with the held-out tests left out of its names (a held-out file
// may replace a test file of the base): they count among the unlisted.
func withoutHeldOut(f testresults.FloorResult, held *checks.Withholding) testresults.FloorResult {
	if held == nil {
		return f
	}
	keep := func(names []string) []string {
		var out []string
		for _, n := range names {
			if !held.Defines(n) && !held.Mentions(n) {
				out = append(out, n)
			}
		}
		return out
	}
	f.NotRun, f.FailedNames = keep(f.NotRun), keep(f.FailedNames)
	return f
}

// partNames are the package.json scripts and Makefile targets the commands run: the
// names the parts "scripts" and "targets" protect.
func partNames(cmds []string) []string {
	return append(fileparts.ScriptsRun(cmds), fileparts.TargetsRun(cmds)...)
}

// runsCommands reports whether verification runs anything in the workspace: verify
// commands, immediate criteria or held-out tests. Without any there is nothing for a
// judge's view to judge.
func runsCommands(c *contract.Contract) bool {
	if len(c.Completion.Verify) > 0 || len(c.Verification.HeldOut) > 0 {
		return true
	}
	for _, cr := range c.Verification.Criteria {
		if cr.Timing != contract.TimingDeferred {
			return true
		}
	}
	return false
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

// envReader reads a workspace-relative file of the judge's Env of the base (a regular
// file beneath it, no link followed), for the files protected scripts run.
func envReader(env string) func(rel string) ([]byte, bool) {
	return func(rel string) ([]byte, bool) {
		if env == "" || !filepath.IsLocal(filepath.FromSlash(rel)) {
			return nil, false
		}
		f, err := workspace.OpenRegularBeneath(env, filepath.FromSlash(rel))
		if err != nil {
			return nil, false
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		return b, err == nil
	}
}
