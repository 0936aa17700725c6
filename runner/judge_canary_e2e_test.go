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
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/checks/testresults"
	"github.com/countersign/countersign/runner/sandbox"
)

// Workers whose own code (calc.go, which no rule protects) runs inside the judge's
// test run and games it at start-up.
const (
	// forgeInit prints a pass for every test function of the package's test files
	// and exits 0 before any test runs: the judge's canary must-fail test included.
	forgeInit = `cat > calc.go <<'EOF'
package calc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func init() {
	if !strings.HasSuffix(os.Args[0], ".test") {
		return
	}
	files, _ := filepath.Glob("*_test.go")
	re := regexp.MustCompile(` + "`(?m)^func (Test\\w+)\\(t \\*testing\\.T\\)`" + `)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			fmt.Printf("=== RUN   %s\n--- PASS: %s (0.00s)\n", m[1], m[1])
		}
	}
	fmt.Println("PASS")
	os.Exit(0)
}

// Add adds.
func Add(a, b int) int { return a - b }

// Sub subtracts.
func Sub(a, b int) int { return a - b }
EOF
echo TASK_COMPLETE`
	// skipAtStart special-cases the visible test's input and, as the test binary
	// starts, skips every test but the ones it knows: the held-out test never runs,
	// nothing fails, and every test that passed at the base still passes.
	skipAtStart = `cat > calc.go <<'EOF'
package calc

import (
	"os"
	"strings"
)

func init() {
	if strings.HasSuffix(os.Args[0], ".test") {
		os.Args = append(os.Args, "-test.skip=^TestAddMore$")
	}
}

// Add adds.
func Add(a, b int) int {
	if a == 2 && b == 3 {
		return 5
	}
	return a - b
}

// Sub subtracts.
func Sub(a, b int) int { return a - b }
EOF
echo TASK_COMPLETE`
	// exitAtStart ends the test binary, successfully, before any test runs.
	exitAtStart = `sed -i 's/^package calc$/package calc\n\nimport "os"\n\nfunc init() {\n\tif len(os.Args) > 0 \&\& len(os.Args[0]) > 5 \&\& os.Args[0][len(os.Args[0])-5:] == ".test" {\n\t\tos.Exit(0)\n\t}\n}/' calc.go; echo TASK_COMPLETE`
	fixAdd      = `sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int { return a + b }/' calc.go; echo TASK_COMPLETE`
)

// TestTheJudgeHoldsResultsHonest: through the whole runner, with the default rules and
// a held-out test, a worker whose code forges the results, one that keeps the
// held-out test from running, and one that ends the test binary at start-up are not
// verified, each diagnosis saying what was gamed; an honest fix is verified with its
// canaries held. TestCanaryCatchesForgedResults (runner/judge) shows each runner's
// forgery passing with the canary switched off, and TestHeldOutNotRun here the
// held-out test's absence passing with that check off.
func TestTheJudgeHoldsResultsHonest(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is needed: %v", err)
	}
	cases := []struct {
		name, worker, stage string
		verified            bool
		diag                []string
		canary              string // the canary status the report must hold
	}{
		{"forge-init", forgeInit, models.StageTamper, false, []string{"the test run was tampered with", "must-fail canary test is reported pass"}, models.CanaryTampered},
		{"skip-heldout", skipAtStart, models.StageVerify, false, []string{"1 held-out test(s) did not run"}, models.CanaryHeld},
		{"exit-at-start", exitAtStart, models.StageTamper, false, []string{"the test run was tampered with", "must-fail canary test is missing"}, models.CanaryTampered},
		{"fair", fixAdd, "", true, nil, models.CanaryHeld},
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	rules := models.DefaultRules()
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, &rules))
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	must(t, err)
	sharedCache := strings.TrimSpace(string(out))
	tasks := map[string]int64{}
	for _, c := range cases {
		dir := filepath.Join(h.root, "projects", c.name)
		writeFiles(t, dir, calcModule)
		role := "dev-" + c.name
		cacheDir := filepath.Join(h.cfg.Workspaces.Root(), "agents", "w-"+c.name, "home", ".cache")
		must(t, os.MkdirAll(cacheDir, 0o750))
		must(t, os.Symlink(sharedCache, filepath.Join(cacheDir, "go-build")))
		h.worker("w-"+c.name, role, c.worker, func(a *models.Agent) {
			a.Workdir = dir
			a.Sandbox.Write = []string{sharedCache}
		})
		tasks[c.name] = h.task("Fix Add in calc", role, contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyAuto, HeldOut: []contract.HeldOutTest{heldOutAdd}},
		}).ID
	}
	h.start()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := h.settled(tasks[c.name], 4*time.Minute)
			atts := h.attempts(tasks[c.name])
			last := atts[len(atts)-1]
			if c.verified != (got.State == models.TaskVerified) {
				t.Fatalf("%s, want verified=%v; last attempt: stage %s: %s", got.State, c.verified, last.Stage, last.Diagnosis)
			}
			if !c.verified && last.Stage != c.stage {
				t.Fatalf("stage %q, want %q: %s", last.Stage, c.stage, last.Diagnosis)
			}
			for _, d := range c.diag {
				if !strings.Contains(last.Diagnosis, d) {
					t.Errorf("the diagnosis does not say %q:\n%s", d, last.Diagnosis)
				}
			}
			if strings.Contains(last.Diagnosis, "TestAddMore") || strings.Contains(last.Diagnosis, "MustFail") {
				t.Errorf("the diagnosis names a held-out test or a canary:\n%s", last.Diagnosis)
			}
			if last.Judge == nil || len(last.Judge.Canary) != 1 || last.Judge.Canary[0].Status != c.canary || last.Judge.Canary[0].Kind != contract.CanaryGo {
				t.Fatalf("canary report %+v, want one go canary %s", last.Judge, c.canary)
			}
			matches, _ := filepath.Glob(filepath.Join(h.root, "projects", c.name, "zz_countersign_canary_*"))
			if len(matches) > 0 {
				t.Errorf("the canary was left in the workspace: %v", matches)
			}
		})
	}
}

// TestHeldOutNotRun: a run in which a held-out test did not run (skipped, or absent)
// fails the verify stage, naming no test; switched off (the judge only noticing
// held-out tests that failed) the same run passes.
func TestHeldOutNotRun(t *testing.T) {
	run := checks.TestRun{Report: testresults.Report{Results: []testresults.Result{
		{Name: "calc.TestAdd", Status: testresults.StatusPass},
		{Name: "calc.TestAddMore", Status: testresults.StatusSkip},
	}}}
	judgeWith := func() models.CheckResult {
		ar := &attemptRun{judge: &judgeRun{atBase: map[int]*testresults.Report{},
			report: models.JudgeReport{HeldOut: &models.HeldOutReport{Files: 1}}}}
		ar.judge.withhold(&checks.VerifyRequest{}, []contract.HeldOutTest{heldOutAdd})
		return ar.judgeVerdict(models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictPass},
			[]checks.TestRun{run})
	}
	r := judgeWith()
	if r.Verdict != models.VerdictFail || !strings.Contains(r.Diagnosis, "1 held-out test(s) did not run") || strings.Contains(r.Diagnosis, "TestAddMore") {
		t.Fatalf("verdict %s: %s", r.Verdict, r.Diagnosis)
	}
	heldOutNotRunOff = true
	defer func() { heldOutNotRunOff = false }()
	if r := judgeWith(); r.Verdict != models.VerdictPass {
		t.Fatalf("with the check off: verdict %s: %s", r.Verdict, r.Diagnosis)
	}
}
