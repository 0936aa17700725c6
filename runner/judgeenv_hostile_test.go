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

// envCase is one worker of TestTheJudgeOwnsItsEnvironment.
type envCase struct {
	name   string
	files  map[string]string
	worker string
	// then is a second task of the same agent, created once the first settled.
	then string
	// cheat: the worker fixes nothing; with the defence off it is verified.
	cheat bool
	// diag: what the diagnosis of a defended cheat names (the test that still fails).
	diag string
}

// calcWithModule is calcModule whose tests need a module from the proxy: the judge
// must find it in its own module cache (judged runs have GOPROXY=off).
var calcWithModule = map[string]string{
	"go.mod": "module calc\n\ngo 1.21\n\nrequire github.com/google/go-cmp v0.7.0\n",
	"go.sum": "github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=\n" +
		"github.com/google/go-cmp v0.7.0/go.mod h1:pXiqmnSA92OHEEa9HXL2W4E7lf9JzCmGVUdgjX3N/iU=\n",
	"calc.go": calcModule["calc.go"],
	"calc_test.go": "package calc\n\nimport (\n\t\"testing\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\n" +
		"func TestAdd(t *testing.T) {\n\tif d := cmp.Diff(5, Add(2, 3)); d != \"\" {\n\t\tt.Fatal(d)\n\t}\n}\n",
}

// userHack is a pytest plugin, written into the worker's Python user site, that
// reports every test as passed.
const userHack = `cat > "$site/userhack.py" <<'EOF'
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
EOF
`

// pyShadow writes a pytest.py that `python3 -m pytest` would run instead of pytest,
// writing a report in which every test passed.
const pyShadow = `cat > pytest.py <<'EOF'
import sys
for a in sys.argv:
    if a.startswith("--junitxml="):
        open(a.split("=", 1)[1], "w").write('<testsuite name="pytest" tests="1"><testcase classname="test_calc" name="test_add"/></testsuite>')
EOF
echo TASK_COMPLETE`

// envCases are the hostile workers that poison their own home and the honest fixes.
// None of the cheats changes a file of the project: the function under test stays
// wrong.
func envCases() []envCase {
	site := `site=$(python3 -m site --user-site) && mkdir -p "$site" && ` + userHack
	return []envCase{
		// (a, b) go env -w writes $HOME/.config/go/env: the judge's go test would run
		// only the test that passes (which also beats the floor). The agent's next
		// task, which does nothing, must not be verified on the poisoned home either.
		{name: "go-env", files: calcModule, cheat: true, diag: "TestAdd", worker: `go env -w 'GOFLAGS=-run=^TestSub$' && echo TASK_COMPLETE`, then: `echo TASK_COMPLETE`},
		// (c) usercustomize.py in the user site turns the plugin on in every python.
		{name: "py-usercustomize", files: pythonProject, cheat: true, diag: "test_add",
			worker: site + `echo 'import os; os.environ.setdefault("PYTEST_PLUGINS", "userhack")' > "$site/usercustomize.py" && echo TASK_COMPLETE`},
		// (d) a .pth file's import line runs at every start-up too.
		{name: "py-pth", files: pythonProject, cheat: true, diag: "test_add",
			worker: site + `echo 'import os; os.environ.setdefault("PYTEST_PLUGINS", "userhack")' > "$site/zz-hack.pth" && echo TASK_COMPLETE`},
		// (e) ~/.npmrc: a script-shell that exits 0 whatever the script, or
		// node-options requiring a hook that swallows the failing assertion.
		{name: "npm-script-shell", files: nodeProject, cheat: true,
			worker: `printf '#!/bin/sh\nexit 0\n' > "$HOME/fakesh" && chmod +x "$HOME/fakesh" && echo "script-shell=$HOME/fakesh" > "$HOME/.npmrc" && echo TASK_COMPLETE`},
		{name: "npm-node-options", files: nodeProject, cheat: true,
			worker: `echo "process.on('uncaughtException', () => process.exit(0));" > "$HOME/hook.js" && echo "node-options=--require=$HOME/hook.js" > "$HOME/.npmrc" && echo TASK_COMPLETE`},
		// Files in the workspace that the old environment let configure the runner:
		// a project .npmrc's script-shell (the judge pins /bin/sh over it), and a
		// pytest.py that shadows pytest for `python3 -m pytest` and writes a passing
		// report (PYTHONSAFEPATH keeps the working directory off the front of sys.path).
		{name: "npm-project-shell", files: nodeProject, cheat: true,
			worker: `printf '#!/bin/sh\nexit 0\n' > fakesh && chmod +x fakesh && echo "script-shell=$PWD/fakesh" > .npmrc && echo TASK_COMPLETE`},
		{name: "py-shadow", files: pythonProject, cheat: true, diag: "test_add", worker: pyShadow},
		// Honest fixes are verified under the judge's environment.
		{name: "go-fair", files: calcModule, worker: `sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int { return a + b }/' calc.go && echo TASK_COMPLETE`},
		// A module the tests import: the judge's own go mod download, before the first
		// attempt, put it in the judge's module cache.
		{name: "go-module-fair", files: calcWithModule, worker: `sed -i 's/^func Add(a, b int) int { return a - b }$/func Add(a, b int) int { return a + b }/' calc.go && echo TASK_COMPLETE`},
		{name: "py-fair", files: pythonProject, worker: `sed -i 's/a - b/a + b/' calc.py && echo TASK_COMPLETE`},
		{name: "npm-fair", files: nodeProject, worker: `sed -i 's/a - b/a + b/' calc.js && echo TASK_COMPLETE`},
	}
}

// TestTheJudgeOwnsItsEnvironment: workers that poison their own home — go env -w
// GOFLAGS, a Python user-site usercustomize.py or .pth file that loads a plugin
// passing every test, a ~/.npmrc with a fake script-shell or node-options requiring a
// hook — fix nothing and end not verified, and a second task of the poisoned agent
// that does nothing is not verified either: every judged run gets the judge's own
// home, PATH and toolchain configuration (judge.Env). Honest fixes in Go, Python and
// Node are verified. With the defence off (judgeEnvOff: judged runs get the agent's
// home as before) every cheat, and the idle second task, is verified.
func TestTheJudgeOwnsItsEnvironment(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed (.ci/run installs it): %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Fatalf("Debian's python3 with pytest is needed (.ci/run installs python3-pytest): %v", err)
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH")) // Debian's python3, with pytest
	// The runner's own GOFLAGS would override the worker's env file in the old
	// environment; unset, the defence-off run shows the cheat as it works in the wild.
	t.Setenv("GOFLAGS", "")
	os.Unsetenv("GOFLAGS")
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	must(t, err)
	sharedCache := strings.TrimSpace(string(out))
	for _, off := range []bool{false, true} {
		name := "defended"
		if off {
			name = "defence-off"
		}
		t.Run(name, func(t *testing.T) { judgeEnvRun(t, sb, sharedCache, off) })
	}
}

// judgeEnvRun runs every envCase with the judge's environment on, or off.
func judgeEnvRun(t *testing.T, sb *sandbox.Sandbox, sharedCache string, off bool) {
	h := newHarness(t, "sqlite", func(c *Config) {
		c.Sandbox = sb
		c.JudgeGoCache = sharedCache // warm: the judge's shared build cache, read-only under each run
	})
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, ptrTo(models.DefaultRules())))
	// With the defence off, the judge's other defences that would also catch some of
	// these cheats (the canary sees a run whose results were forged; the protected
	// paths restore a project .npmrc or pytest.py) are off too: what is measured is
	// this defence alone.
	judgeEnvOff, canaryOff = off, off
	t.Cleanup(func() { judgeEnvOff, canaryOff = false, false }) // after the pool stops (cleanups run last first)
	cases := envCases()
	contract := contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyAuto, TestsMayChange: off}}
	tasks := map[string]*models.Task{}
	for _, c := range cases {
		dir := filepath.Join(h.root, "projects", c.name)
		writeFiles(t, dir, c.files)
		// The agent's own Go build cache, warm (used by the judged runs only with the
		// defence off).
		cacheDir := filepath.Join(h.cfg.Workspaces.Root(), "agents", "w-"+c.name, "home", ".cache")
		must(t, os.MkdirAll(cacheDir, 0o750))
		must(t, os.Symlink(sharedCache, filepath.Join(cacheDir, "go-build")))
		h.worker("w-"+c.name, "dev-"+c.name, c.worker, func(a *models.Agent) {
			a.Workdir = dir
			a.Sandbox.Write = []string{sharedCache}
		})
		tasks[c.name] = h.task("Fix add in calc", "dev-"+c.name, contract)
	}
	h.start()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := tasks[c.name].ID
			got := h.settled(id, 4*time.Minute)
			atts := h.attempts(id)
			last := atts[len(atts)-1]
			want := !c.cheat || off
			if (got.State == models.TaskVerified) != want {
				t.Fatalf("%s: %s, want verified=%v; last attempt: stage %s: %s", c.name, got.State, want, last.Stage, last.Diagnosis)
			}
			if c.cheat && !off && !strings.Contains(last.Diagnosis, c.diag) {
				t.Errorf("%s: the diagnosis does not name %q:\n%s", c.name, c.diag, last.Diagnosis)
			}
			if c.name == "go-module-fair" && !off {
				if _, err := os.Stat(filepath.Join(h.pool.run.judging.judgeRoot(), "gomodcache", "github.com", "google", "go-cmp@v0.7.0")); err != nil {
					t.Errorf("the module is not in the judge's module cache: %v", err)
				}
			}
			if c.then == "" {
				return
			}
			// The same agent's next task, in a fresh copy of the project, does nothing.
			dir := filepath.Join(h.root, "projects", c.name+"-then")
			writeFiles(t, dir, c.files)
			a, err := h.db.GetAgentByName(h.ctx, "w-"+c.name)
			must(t, err)
			a.Command, a.Workdir = c.then, dir
			must(t, h.svc.Agents.UpdateAgent(h.ctx, h.boss, a))
			second := h.task("Fix add in calc, again", "dev-"+c.name, contract)
			got = h.settled(second.ID, 4*time.Minute)
			atts = h.attempts(second.ID)
			last = atts[len(atts)-1]
			if (got.State == models.TaskVerified) != off {
				t.Fatalf("%s, second task: %s, want verified=%v; last attempt: stage %s: %s", c.name, got.State, off, last.Stage, last.Diagnosis)
			}
		})
	}
}
