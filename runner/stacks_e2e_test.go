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

// writeFiles lays out a project in dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o750))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// stackRun is one project of TestContractsFitTheWorkspace.
type stackRun struct {
	name     string
	files    map[string]string
	worker   string   // the worker's command, run in the project
	want     []string // commands the generated contract must hold
	wantNone bool     // no command at all (docs only)
}

// TestContractsFitTheWorkspace: auto contracts get the commands of the stacks the
// workspace shows, and none of a stack it does not. A Python project's tests are run
// with pytest (a worker that breaks one gets a revision with pytest's failure in its
// brief, then fixes it); a Node project's with its npm test script; a docs-only folder
// is verified with no command; a Go project still gets vet, gofmt and go test. No
// contract of a non-Go workspace names a Go tool. Every process runs confined.
func TestContractsFitTheWorkspace(t *testing.T) {
	for _, tool := range []string{"npm", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", tool, err)
		}
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Fatalf("Debian's python3 with pytest is needed (.ci/run installs python3-pytest): %v", err)
	}
	// Debian's python3 (with pytest) first: a version manager's python3 may lack it.
	t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH"))
	runs := []stackRun{
		{
			name: "python",
			files: map[string]string{
				"pytest.ini":   "[pytest]\n",
				"calc.py":      "def add(a, b):\n    return a + b\n",
				"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
			},
			// Attempt 1 breaks add, in a file of the original's size (as Python's
			// bytecode cache compares it), often within the second of the baseline's pytest
			// run: the checks' own bytecode directory keeps a .pyc cached then from
			// passing the broken source (see TestPlantedBytecodeIsNotJudged). The
			// revision reads pytest's failure in its brief and puts it right.
			worker: `if [ "$COUNTERSIGN_ATTEMPT" = 1 ]; then printf 'def add(a, b):\n    return a - b\n' > calc.py; ` +
				`elif grep -q 'assert' "$COUNTERSIGN_BRIEF_FILE"; then printf 'def add(a, b):\n    return a + b  # fixed\n' > calc.py; fi; echo TASK_COMPLETE`,
			want: []string{"python3 -m pytest -q"},
		},
		{
			name: "node",
			files: map[string]string{
				"package.json":      `{"name": "calc", "version": "1.0.0", "scripts": {"test": "node test.js"}}`,
				"package-lock.json": `{"name": "calc", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "calc", "version": "1.0.0"}}}`,
				"calc.js":           "module.exports.add = (a, b) => a + b;\n",
				"test.js":           "const assert = require('assert');\nassert.strictEqual(require('./calc').add(2, 3), 5);\n",
			},
			worker: `echo '// checked' >> calc.js; echo TASK_COMPLETE`,
			want:   []string{"npm test"},
		},
		{
			name:     "docs",
			files:    map[string]string{"README.md": "# Guide\n\nHow to add numbers.\n"},
			worker:   `echo 'More words.' >> README.md; echo TASK_COMPLETE`,
			wantNone: true,
		},
		{
			name: "go",
			files: map[string]string{
				"go.mod":      "module calc\n\ngo 1.21\n",
				"add.go":      "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
				"add_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
			},
			worker: `printf '\n// Sub is to come.\n' >> add.go; echo TASK_COMPLETE`,
			want:   []string{"go test ./...", "go vet ./...", "gofmt"},
		},
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	// The default rules, stacks and all, not the harness's test-only ones.
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, ptrTo(models.DefaultRules())))
	tasks := map[string]*models.Task{}
	for _, r := range runs {
		dir := filepath.Join(h.root, "projects", r.name)
		writeFiles(t, dir, r.files)
		role := "dev-" + r.name
		h.worker("w-"+r.name, role, r.worker, func(a *models.Agent) { a.Workdir = dir })
		tasks[r.name] = h.task("Fix the add function and its tests", role, contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE"},
			Verification: contract.Verification{Type: contract.VerifyAuto},
		})
	}
	h.start()
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			id := tasks[r.name].ID
			got := h.settled(id, 3*time.Minute)
			if got.State != models.TaskVerified {
				t.Fatalf("%s: %s; attempts %+v", r.name, got.State, h.attempts(id))
			}
			var cmds []string
			for _, c := range got.Contract.Verification.Criteria {
				cmds = append(cmds, c.Command)
			}
			cmds = append(cmds, got.Contract.Completion.Verify...)
			all := strings.Join(cmds, "\n")
			for _, w := range r.want {
				if !strings.Contains(all, w) {
					t.Errorf("the contract lacks %q: %q", w, cmds)
				}
			}
			if r.wantNone && strings.TrimSpace(all) != "" {
				t.Errorf("a docs-only contract has commands: %q", cmds)
			}
			if r.name != "go" && (strings.Contains(all, "go ") || strings.Contains(all, "gofmt")) {
				t.Errorf("a %s workspace got a Go tool: %q", r.name, cmds)
			}
			if r.name == "python" {
				atts := h.attempts(id)
				if len(atts) != 2 || atts[0].Stage != models.StageVerify {
					t.Fatalf("python: want a failed verify then a pass, got %+v", atts)
				}
				if brief := h.brief(id, 2); !strings.Contains(brief, "assert") || !strings.Contains(brief, "test_calc.py") {
					t.Errorf("the revision's brief lacks pytest's failure:\n%s", brief)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
