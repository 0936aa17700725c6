package judge

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/checks/testresults"
)

// envNodeRunners names the node_modules that .ci/run installs jest, vitest and mocha
// into (pinned); the Node tests link it into their projects.
const envNodeRunners = "COUNTERSIGN_NODE_RUNNERS"

// need fails the test in CI when a tool is missing (CI installs it), else skips it.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing; CI installs it (.ci/run)", what)
	}
	t.Skipf("%s is missing", what)
}

func onPath(t *testing.T, tool string) {
	t.Helper()
	_, err := exec.LookPath(tool)
	need(t, err == nil, tool)
}

// runner is one test runner the canary tests drive for real.
type runner struct {
	name    string
	tools   []string
	modules bool // links COUNTERSIGN_NODE_RUNNERS as node_modules
	honest  project
	bug     project
	forge   project
	failing string // the test the bug fails, as its results name it
}

var runners = []runner{
	{"go", []string{"go"}, false, goProject, goBug, goForge, "example.com/calc.TestAdd"},
	{"pytest", []string{"python3"}, false, pyProject, pyBug, pyForge, "tests.test_calc.test_add"},
	{"node-test", []string{"node", "npm"}, false, nodeTestProject, project{"calc.js": jsCalcBug}, nodeTestForge, "adds"},
	{"jest", []string{"node", "npm"}, true, jestProject, project{"calc.js": jsCalcBug}, jestForge, "adds"},
	{"vitest", []string{"node", "npm"}, true, vitestProject, vitestBug, vitestForge, "test/calc.test.js.adds"},
	{"mocha", []string{"node", "npm"}, true, mochaProject, project{"calc.js": jsCalcBug}, mochaForge, "adds"},
}

// writeProject writes p into a fresh directory, with the pinned Node runners linked
// as its node_modules when the runner needs them.
func (r runner) writeProject(t *testing.T, p project) string {
	t.Helper()
	for _, tool := range r.tools {
		onPath(t, tool)
	}
	if r.name == "pytest" {
		// Debian's python3 (.ci/run installs python3-pytest), before any other.
		err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run()
		need(t, err == nil, "/usr/bin/python3 with pytest")
		t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH"))
	}
	dir := t.TempDir()
	for rel, content := range p {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r.modules {
		mods := os.Getenv(envNodeRunners)
		_, err := os.Stat(filepath.Join(mods, ".bin", r.name))
		need(t, mods != "" && err == nil, envNodeRunners+" with "+r.name)
		if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var testFileRE = regexp.MustCompile(`(_test\.go|^test_.*\.py|_test\.py|\.(test|spec)\.[cm]?[jt]sx?)$|(^|/)(test|tests|__tests__)/`)

// testFilesOf lists the test files of dir, as the protected paths would.
func testFilesOf(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if !d.IsDir() && testFileRE.MatchString(rel) && testFileRE.MatchString(d.Name()) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// judged is one judged run: the verify stage's result, the structured results, the
// canaries and the judge's reading of them.
type judged struct {
	res      models.CheckResult
	run      checks.TestRun
	canaries Canaries
	tampered bool
	diag     string
}

// judgedRun runs the unit-test criterion of dir's stack with the structured-results
// command the default rules choose, as the judge does: with the canary pair in the
// project when canary is set (switched off, neither the files nor the check).
func judgedRun(t *testing.T, dir string, canary bool) judged {
	t.Helper()
	facts, err := contract.DetectWorkspace(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var match *contract.StackMatch
	for _, m := range contract.MatchStacks(models.DefaultRules().Rules, facts) {
		if m.Results != nil {
			match = &m
			break
		}
	}
	if match == nil {
		t.Fatalf("no stack with structured results for %v", facts)
	}
	res := *match.Results
	var j judged
	req := checks.VerifyRequest{Dir: dir, Results: map[int]contract.TestResults{0: res}, ResultsDir: t.TempDir(), Timeout: 3 * time.Minute,
		Criteria: []contract.Criterion{{Activity: "unit-test", Stack: match.Name, Command: match.Commands[0].Command}}}
	if canary {
		var files []File
		files, j.canaries = NewCanaries(NewNonce(), res, dir, testFilesOf(t, dir))
		if j.canaries.Kind == "" || len(files) != 1 {
			t.Fatalf("no canary for %s: %s", res.Command, j.canaries.Reason)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f.Rel)), []byte(f.Content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		req.Expect = &checks.ExpectedFailures{Env: []string{EnvCanary + "=" + j.canaries.Nonce}, Fail: j.canaries.ExpectedFailure}
	}
	var runs []checks.TestRun
	j.res, _, runs = checks.VerifyWith(context.Background(), req)
	if len(runs) != 1 {
		t.Fatalf("%d structured runs: %+v", len(runs), j.res)
	}
	j.run = runs[0]
	if canary {
		ok, diag := j.canaries.Check(j.run.Report)
		j.tampered = !ok && (j.res.Verdict == models.VerdictPass || j.canaries.FailReportedNotFailed(j.run.Report))
		j.diag = diag
	}
	return j
}

// statusOf is the status of the test name defines (mocha's top-level tests are
// named by their file's path: "/tmp/…/calc.spec.js::adds").
func statusOf(rep testresults.Report, name string) testresults.Status {
	for _, r := range rep.Results {
		if testresults.Defines(name, r.Name) {
			return r.Status
		}
	}
	return "missing"
}

// TestCanaryHonestRunners: an honest project of every runner is verified with its
// canary pair in place: the must-fail canary fails (as it must) without failing the
// check, the must-pass one passes, and the project's own tests are read by name.
func TestCanaryHonestRunners(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			j := judgedRun(t, r.writeProject(t, r.honest), true)
			if j.res.Verdict != models.VerdictPass || j.tampered {
				t.Fatalf("verdict %s tampered %v: %s\n%s\nresults %+v", j.res.Verdict, j.tampered, j.res.Diagnosis, j.diag, j.run.Report.Results)
			}
			if st := statusOf(j.run.Report, r.failing); st != testresults.StatusPass {
				t.Errorf("%s is %s in %+v", r.failing, st, j.run.Report.Results)
			}
			if j.run.Report.Pass < 3 || j.run.Report.Fail != 1 {
				t.Errorf("pass %d fail %d, want the tests and a canary passed, the other canary failed: %+v", j.run.Report.Pass, j.run.Report.Fail, j.run.Report.Results)
			}
		})
	}
}

// TestCanaryFailingRunners: a buggy project of every runner fails, the failing test
// named in the diagnosis, the canaries never.
func TestCanaryFailingRunners(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			j := judgedRun(t, r.writeProject(t, r.honest.with(r.bug)), true)
			if j.res.Verdict != models.VerdictFail || j.tampered {
				t.Fatalf("verdict %s tampered %v: %s", j.res.Verdict, j.tampered, j.res.Diagnosis)
			}
			if st := statusOf(j.run.Report, r.failing); st != testresults.StatusFail {
				t.Errorf("%s is %s in %+v", r.failing, st, j.run.Report.Results)
			}
			if !strings.Contains(j.res.Diagnosis, r.failing) || strings.Contains(j.res.Diagnosis, j.canaries.Nonce) {
				t.Errorf("diagnosis names %s and no canary? %s", r.failing, j.res.Diagnosis)
			}
		})
	}
}

// TestCanaryCatchesForgedResults: in every runner, something inside the test run
// forges the results (a TestMain printing passes, pytest's report patched by the code
// under test, the results file rewritten as the runner's process exits): with the
// canary the run is tampered with; with the canary switched off the forgery passes.
func TestCanaryCatchesForgedResults(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			hostile := r.honest.with(r.bug).with(r.forge)
			off := judgedRun(t, r.writeProject(t, hostile), false)
			if off.res.Verdict != models.VerdictPass {
				t.Fatalf("without the canary the forgery should pass (so the test shows something): %s %s", off.res.Verdict, off.res.Diagnosis)
			}
			j := judgedRun(t, r.writeProject(t, hostile), true)
			if !j.tampered || !strings.Contains(j.diag, "tampered") {
				t.Fatalf("forged run not caught: verdict %s, canary %q\nresults %+v", j.res.Verdict, j.diag, j.run.Report.Results)
			}
		})
	}
}
