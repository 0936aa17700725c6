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

// A Node project whose add is wrong; the fix this test's workers make needs a new
// dependency (is-number, from the npm registry).
var nodeDepsProject = map[string]string{
	".gitignore":        "node_modules/\n",
	"package.json":      `{"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}`,
	"package-lock.json": `{"name": "calc", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "calc", "version": "1.0.0"}}}`,
	"calc.js":           "module.exports.add = (a, b) => a - b;\n",
	"test.js":           "const assert = require('assert');\nassert.strictEqual(require('./calc').add(2, 3), 5);\nassert.throws(() => require('./calc').add('2', 3));\n",
}

// depsCase is one worker of TestTheJudgeInstallsChangedDependencies.
type depsCase struct {
	name     string
	worker   string
	off      bool // the judge's install switched off
	verified bool
	diag     string // what the diagnosis names, when not verified
	deps     string // what the report's dependencies name
}

// TestTheJudgeInstallsChangedDependencies: where the contract lets dependencies
// change, an honest fix that adds one (npm install is-number) is verified: the judge
// installs the candidate's lockfile itself in its view and lists the dependency on
// the report. The worker's own node_modules never reaches the judge: a worker that
// rigs its installed copy of the new dependency is not verified. A dependency that
// points at a path inside the workspace is not installed, and says so. With the
// judge's install switched off the honest fix fails (the view's node_modules is the
// base's, without is-number), so the test can fail.
func TestTheJudgeInstallsChangedDependencies(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed (.ci/run installs it): %v", err)
	}
	t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH"))
	install := `npm install --ignore-scripts --no-audit --no-fund --loglevel=error is-number@7.0.0 >/dev/null && `
	fix := `printf "const isNumber = require('is-number');\nmodule.exports.add = (a, b) => { if (!isNumber(a) || !isNumber(b) || typeof a !== 'number') throw new TypeError('numbers only'); return a + b; };\n" > calc.js; echo TASK_COMPLETE`
	// The rigged copy answers "rigged", which calc.js turns into the expected sum.
	rig := `printf "module.exports = () => 'rigged';\n" > node_modules/is-number/index.js; ` +
		`printf "const isNumber = require('is-number');\nmodule.exports.add = (a, b) => { if (typeof a !== 'number') throw new TypeError('numbers only'); return isNumber(a) === 'rigged' ? 5 : a - b; };\n" > calc.js; echo TASK_COMPLETE`
	local := `mkdir -p fake && printf '{"name": "is-number", "version": "7.0.0"}' > fake/package.json && printf "module.exports = () => true;\n" > fake/index.js && ` +
		`npm install --ignore-scripts --no-audit --no-fund --loglevel=error ./fake >/dev/null && ` + fix
	cases := []depsCase{
		{name: "honest", worker: install + fix, verified: true, deps: "is-number"},
		{name: "rigged-tree", worker: install + rig, diag: "AssertionError", deps: "is-number"},
		{name: "local-path", worker: local, diag: "a local path", deps: "(a local path)"},
		// Off: the view's node_modules is the base's, which has no is-number.
		{name: "honest-install-off", worker: install + fix, off: true, diag: "is-number"},
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.off {
				depsInstallOff = true
				t.Cleanup(func() { depsInstallOff = false })
			}
			h := newHarness(t, "sqlite", func(cfg *Config) { cfg.Sandbox = sb })
			rules := models.DefaultRules()
			must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, &rules))
			dir := filepath.Join(h.root, "project")
			writeFiles(t, dir, nodeDepsProject)
			gitInit(t, dir)
			h.worker("w", "dev", c.worker, func(a *models.Agent) { a.Workdir = dir })
			task := h.task("Make add add, numbers only", "dev", contract.Contract{
				Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
				Verification: contract.Verification{Type: contract.VerifyAuto, DependenciesMayChange: true},
			})
			h.start()
			got := h.settled(task.ID, 4*time.Minute)
			atts := h.attempts(task.ID)
			last := atts[len(atts)-1]
			if c.verified != (got.State == models.TaskVerified) {
				t.Fatalf("%s, want verified=%v; last attempt: stage %s: %s", got.State, c.verified, last.Stage, last.Diagnosis)
			}
			if !c.verified && !strings.Contains(last.Diagnosis, c.diag) {
				t.Errorf("the diagnosis does not name %q:\n%s", c.diag, last.Diagnosis)
			}
			if c.deps == "" {
				return
			}
			if last.Judge == nil || !strings.Contains(strings.Join(last.Judge.Dependencies, "\n"), c.deps) {
				t.Errorf("the judge's report does not list %q among the dependencies: %+v", c.deps, last.Judge)
			}
		})
	}
}
