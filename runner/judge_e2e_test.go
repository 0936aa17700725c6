//go:build linux && (amd64 || arm64)

package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/sandbox"
)

// A Go module whose Add is wrong, so TestAdd fails at the base; Sub is right and its
// test passes there (the floor holds the judge's run to it).
var calcModule = map[string]string{
	"go.mod":  "module calc\n\ngo 1.21\n",
	"calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n\n" +
		"func TestSub(t *testing.T) {\n\tif got := Sub(5, 3); got != 2 {\n\t\tt.Fatalf(\"Sub(5, 3) = %d, want 2\", got)\n\t}\n}\n",
}

// heldOutAdd is held back from the worker.
var heldOutAdd = contract.HeldOutTest{Path: "calc_heldout_test.go",
	Content: "package calc\n\nimport \"testing\"\n\nfunc TestAddMore(t *testing.T) {\n\tif got := Add(10, 4); got != 14 {\n\t\tt.Errorf(\"Add(10, 4) = %d, want 14\", got)\n\t}\n}\n"}

// judgeCase is one worker of TestTheJudgeCatchesGamedTests.
type judgeCase struct {
	name     string
	worker   string
	files    map[string]string // the project (calcModule when nil)
	contract func(*contract.Verification)
	verified bool
	stage    string   // the failing stage, when not verified
	diag     []string // what the diagnosis must name
	changed  []string // protected files the report must list
	// noFloor judges with a stack that reports no structured results: the floor off.
	noFloor bool
	// git makes the project a git repository with one commit: the base is that commit.
	git bool
}

// TestTheJudgeCatchesGamedTests: workers that game the tests that judge them — skip
// the failing test, delete its file, add a TestMain that exits 0, change the expected
// value, special-case the tested input — end not verified, each diagnosis naming what
// was gamed; a worker that fixes the code and adds a test of its own is verified with
// its test reported. Each defence switched off (tests_may_change, no held-out test,
// no structured results) lets its cheat pass, so each check can fail. Node and Python
// projects are held the same way.
func TestTheJudgeCatchesGamedTests(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed (.ci/run installs it): %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Fatalf("Debian's python3 with pytest is needed (.ci/run installs python3-pytest): %v", err)
	}
	t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH"))
	mayChange := func(v *contract.Verification) { v.TestsMayChange = true }
	heldOut := func(v *contract.Verification) { v.HeldOut = []contract.HeldOutTest{heldOutAdd} }
	skip := `sed -i 's/^func TestAdd(t \*testing.T) {$/&\n\tt.Skip("flaky on CI")/' calc_test.go; echo TASK_COMPLETE`
	del := `rm calc_test.go; echo TASK_COMPLETE`
	testMain := `printf 'package calc\n\nimport (\n\t"os"\n\t"testing"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n' > zz_main_test.go; echo TASK_COMPLETE`
	expect := `sed -i 's/got != 5/got != -1/; s/want 5/want -1/' calc_test.go; echo TASK_COMPLETE`
	special := `if grep -rqs 'Add(10, 4)' . "$COUNTERSIGN_BRIEF_FILE"; then echo seen > /dev/null; touch LEAKED; fi; ` +
		`sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int {\n\tif a == 2 \&\& b == 3 {\n\t\treturn 5\n\t}\n\treturn a - b\n}/' calc.go; echo TASK_COMPLETE`
	fair := `sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int { return a + b }/' calc.go; ` +
		`printf 'package calc\n\nimport "testing"\n\nfunc TestAddZero(t *testing.T) {\n\tif Add(0, 7) != 7 {\n\t\tt.Fatal("Add(0, 7)")\n\t}\n}\n' > calc_more_test.go; echo TASK_COMPLETE`
	skipSub := `sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int { return a + b }/' calc.go; ` +
		`sed -i 's/^func TestSub(t \*testing.T) {$/&\n\tt.Skip("later")/' calc_test.go; echo TASK_COMPLETE`

	cases := []judgeCase{
		{name: "skip", worker: skip, stage: models.StageTamper, diag: []string{"calc_test.go", "TestAdd"}, changed: []string{"calc_test.go"}},
		// In a git checkout the base is the commit: committing the cheat moves nothing.
		{name: "skip-committed", git: true, worker: strings.TrimSuffix(skip, "; echo TASK_COMPLETE") + ` && git -c user.name=w -c user.email=w@x commit -qam "fix flaky test"; echo TASK_COMPLETE`,
			stage: models.StageTamper, diag: []string{"calc_test.go (changed)", "TestAdd"}, changed: []string{"calc_test.go"}},
		{name: "delete", worker: del, stage: models.StageTamper, diag: []string{"calc_test.go (deleted)", "TestAdd"}, changed: []string{"calc_test.go"}},
		{name: "testmain", worker: testMain, stage: models.StageTamper, diag: []string{"zz_main_test.go (added)", "TestAdd"}, changed: []string{"zz_main_test.go"}},
		{name: "expectation", worker: expect, stage: models.StageTamper, diag: []string{"calc_test.go (changed)", "want 5"}, changed: []string{"calc_test.go"}},
		// The diagnosis counts the held-out test, never names it (the report does, for people).
		{name: "special-case", worker: special, contract: heldOut, stage: models.StageVerify, diag: []string{"1 held-out test(s) failed (their names and inputs are withheld)"}},
		{name: "fair", worker: fair, contract: heldOut, verified: true, changed: []string{"calc_more_test.go"}},
		// Defences off: each cheat passes.
		{name: "skip-restore-off", worker: skip, contract: mayChange, verified: true, changed: []string{"calc_test.go"}},
		// Deleting the tests or exiting before they run is caught by the floor too
		// (TestSub passed at the base): both defences off, it passes.
		{name: "delete-restore-off", worker: del, contract: mayChange, stage: models.StageVerify, diag: []string{"TestSub did not run"}, changed: []string{"calc_test.go"}},
		// With the restore off the TestMain runs: go test exits 0 with no test run, the
		// judge's canaries missing with them.
		{name: "testmain-restore-off", worker: testMain, contract: mayChange, stage: models.StageTamper, diag: []string{"the test run was tampered with", "must-fail canary test is missing"}, changed: []string{"zz_main_test.go"}},
		{name: "delete-defences-off", worker: del, contract: mayChange, noFloor: true, verified: true, changed: []string{"calc_test.go"}},
		{name: "testmain-defences-off", worker: testMain, contract: mayChange, noFloor: true, verified: true, changed: []string{"zz_main_test.go"}},
		{name: "expectation-restore-off", worker: expect, contract: mayChange, verified: true, changed: []string{"calc_test.go"}},
		{name: "special-case-no-held-out", worker: special, verified: true},
		// The floor: with the tests allowed to change, a test that passed at base must
		// still run; switched off (below, through rules without results) it passes.
		{name: "floor", worker: skipSub, contract: mayChange, stage: models.StageVerify, diag: []string{"TestSub"}, changed: []string{"calc_test.go"}},
		// Node: a test script changed to exit 0 is caught; a fair edit passes.
		{name: "node-script", files: nodeProject, worker: `sed -i 's/"test": "node test.js"/"test": "exit 0"/' package.json; echo TASK_COMPLETE`,
			stage: models.StageTamper, diag: []string{"package.json"}, changed: []string{"package.json"}},
		{name: "node-script-restore-off", files: nodeProject, contract: mayChange, worker: `sed -i 's/"test": "node test.js"/"test": "exit 0"/' package.json; echo TASK_COMPLETE`,
			verified: true, changed: []string{"package.json"}},
		{name: "node-fair", files: nodeProject, worker: `sed -i 's/a - b/a + b/' calc.js; sed -i 's/"version": "1.0.0",/"version": "1.0.0", "description": "adds",/' package.json; echo TASK_COMPLETE`,
			verified: true},
		// Python: a conftest.py that skips every test is caught.
		{name: "python-conftest", files: pythonProject, worker: `printf 'import pytest\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip(reason="flaky"))\n' > conftest.py; echo TASK_COMPLETE`,
			stage: models.StageTamper, diag: []string{"conftest.py (added)"}, changed: []string{"conftest.py"}},
		// With the restore off the conftest.py runs, and skips the judge's canaries too:
		// the run is caught as tampered with (runner/judge's canary tests show each
		// runner's forgery passing with the canary off).
		{name: "python-conftest-restore-off", files: pythonProject, contract: mayChange, worker: `printf 'import pytest\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip(reason="flaky"))\n' > conftest.py; echo TASK_COMPLETE`,
			stage: models.StageTamper, diag: []string{"the test run was tampered with", "must-fail canary"}, changed: []string{"conftest.py"}},
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	rules := models.DefaultRules()
	// A stack without structured results: the floor switched off.
	for _, st := range rules.Stacks {
		if st.Name == "go" {
			st.Name, st.Results = "go-no-results", nil
			rules.Stacks = append(rules.Stacks, st)
			break
		}
	}
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, &rules))
	cases = append(cases, judgeCase{name: "floor-off", worker: skipSub, contract: mayChange, noFloor: true, verified: true, changed: []string{"calc_test.go"}})

	// The go command's own build cache, warm from building this test, shared by every
	// agent (each one's own would start cold and compile the standard library): these
	// workers are this test's scripts, not strangers.
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	must(t, err)
	sharedCache := strings.TrimSpace(string(out))
	if only := os.Getenv("JUDGE_CASES"); only != "" { // to run a few while debugging
		var keep []judgeCase
		for _, c := range cases {
			if strings.Contains(","+only+",", ","+c.name+",") {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	tasks := map[string]*models.Task{}
	for _, c := range cases {
		tasks[c.name] = judgeCaseTask(t, h, c, sharedCache)
	}
	h.start()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkJudgeCase(t, h, c, tasks[c.name].ID)
		})
	}
}

var nodeProject = map[string]string{
	"package.json":      `{"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}`,
	"package-lock.json": `{"name": "calc", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "calc", "version": "1.0.0"}}}`,
	"calc.js":           "module.exports.add = (a, b) => a - b;\n",
	"test.js":           "const assert = require('assert');\nassert.strictEqual(require('./calc').add(2, 3), 5);\n",
}

var pythonProject = map[string]string{
	"pytest.ini":   "[pytest]\n",
	"calc.py":      "def add(a, b):\n    return a - b\n",
	"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}

// gitInit makes dir a git repository with everything in it committed.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

// judgeCaseTask sets up one case of TestTheJudgeCatchesGamedTests (split out to keep
// that test within the length limit): the case's project, its worker sharing the warm
// Go build cache, and the task judged by the case's verification.
func judgeCaseTask(t *testing.T, h *harness, c judgeCase, sharedCache string) *models.Task {
	t.Helper()
	dir := filepath.Join(h.root, "projects", c.name)
	files := c.files
	if files == nil {
		files = calcModule
	}
	writeFiles(t, dir, files)
	if c.git {
		gitInit(t, dir)
	}
	role := "dev-" + c.name
	// One warm Go build cache for all: each agent's own would start cold.
	cacheDir := filepath.Join(h.cfg.Workspaces.Root(), "agents", "w-"+c.name, "home", ".cache")
	must(t, os.MkdirAll(cacheDir, 0o750))
	must(t, os.Symlink(sharedCache, filepath.Join(cacheDir, "go-build")))
	h.worker("w-"+c.name, role, c.worker, func(a *models.Agent) {
		a.Workdir = dir
		a.Sandbox.Write = []string{sharedCache}
	})
	v := contract.Verification{Type: contract.VerifyAuto}
	if c.contract != nil {
		c.contract(&v)
	}
	if c.noFloor {
		// Judged by a stack that reports no results.
		v = contract.Verification{Type: contract.VerifyVerifiable, TestsMayChange: true, Protect: []string{"*_test.go"},
			Criteria: []contract.Criterion{{Activity: "unit-test", Description: "Unit tests pass", Command: "go test ./...", Stack: "go-no-results"}}}
	}
	return h.task("Fix Add in calc", role, contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: v,
	})
}

// checkJudgeCase checks how the judge settled one case of TestTheJudgeCatchesGamedTests
// (split out to keep that test within the length limit): the state and stage wanted,
// the diagnosis naming what it must and none of the held-out test, the protected files
// reported, and nothing of the held-out test left where the worker could see it.
func checkJudgeCase(t *testing.T, h *harness, c judgeCase, id int64) {
	t.Helper()
	got := h.settled(id, 4*time.Minute)
	atts := h.attempts(id)
	last := atts[len(atts)-1]
	if c.verified != (got.State == models.TaskVerified) {
		t.Fatalf("%s: %s, want verified=%v; last attempt: stage %s: %s", c.name, got.State, c.verified, last.Stage, last.Diagnosis)
	}
	if !c.verified && last.Stage != c.stage {
		t.Fatalf("%s: stage %q, want %q: %s", c.name, last.Stage, c.stage, last.Diagnosis)
	}
	for _, d := range c.diag {
		if !strings.Contains(last.Diagnosis, d) {
			t.Errorf("%s: the diagnosis does not name %q:\n%s", c.name, d, last.Diagnosis)
		}
	}
	if last.Judge == nil {
		t.Fatalf("%s: the attempt has no judge's report", c.name)
	}
	for _, secret := range []string{"TestAddMore", heldOutAdd.Path, "Add(10, 4)", "want 14"} {
		if strings.Contains(last.Diagnosis, secret) {
			t.Errorf("%s: the diagnosis carries %q of the held-out test:\n%s", c.name, secret, last.Diagnosis)
		}
	}
	if ho := last.Judge.HeldOut; c.name == "special-case" && (ho == nil || ho.FailedCount != 1 || len(ho.Failed) != 1 || !strings.Contains(ho.Failed[0], "TestAddMore")) {
		t.Errorf("%s: the report does not keep the failed held-out test for people: %+v", c.name, ho)
	}
	var changed []string
	for _, p := range last.Judge.Protected {
		changed = append(changed, p.Path)
	}
	if strings.Join(changed, ",") != strings.Join(c.changed, ",") {
		t.Errorf("%s: protected files reported %q, want %q", c.name, changed, c.changed)
	}
	dir := filepath.Join(h.root, "projects", c.name)
	if _, err := os.Stat(filepath.Join(dir, "LEAKED")); err == nil {
		t.Errorf("%s: the worker found the held-out test in its workspace or brief", c.name)
	}
	if _, err := os.Stat(filepath.Join(dir, heldOutAdd.Path)); err == nil {
		t.Errorf("%s: the held-out test was left in the workspace", c.name)
	}
	if c.git && len(last.Judge.Base) != 40 {
		t.Errorf("%s: the base is %q, want the commit", c.name, last.Judge.Base)
	}
	if c.name == "skip" {
		// The attempt keeps what the worker left.
		b, _ := os.ReadFile(filepath.Join(dir, "calc_test.go"))
		if !strings.Contains(string(b), "flaky on CI") {
			t.Errorf("the worker's calc_test.go was not put back:\n%s", b)
		}
	}
}
