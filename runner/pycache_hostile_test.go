//go:build linux && (amd64 || arm64)

package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/sandbox"
)

// TestPlantedBytecodeIsNotJudged: a hostile worker compiles the correct calc.py to
// __pycache__, then writes a broken calc.py of the same size and gives it the old
// modification time. Python trusts a .pyc whose header matches the source's size and
// mtime, so pytest would run the planted bytecode and pass the broken source. The
// checks run with PYTHONPYCACHEPREFIX in the attempt's own temp dir (checkEnv), where
// Python reads and writes bytecode instead of the workspace: the broken source is what
// is tested, and the task is not verified. With the defence switched off (no
// PYTHONPYCACHEPREFIX in checkEnv) this test fails: the task is verified.
func TestPlantedBytecodeIsNotJudged(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Fatalf("Debian's python3 with pytest is needed (.ci/run installs python3-pytest): %v", err)
	}
	t.Setenv("PATH", "/usr/bin:/bin:"+os.Getenv("PATH")) // Debian's python3, with pytest
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, ptrTo(models.DefaultRules())))
	dir := filepath.Join(h.root, "projects", "py")
	writeFiles(t, dir, map[string]string{
		"pytest.ini":   "[pytest]\n",
		"calc.py":      "def add(a, b):\n    return a + b\n",
		"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
	})
	plant := `python3 -c "import py_compile; py_compile.compile('calc.py')" && ` +
		`touch -r calc.py "$TMPDIR/ref" && ` +
		`printf 'def add(a, b):\n    return a - b\n' > calc.py && ` +
		`touch -r "$TMPDIR/ref" calc.py && echo TASK_COMPLETE`
	h.worker("w-py", "dev-py", plant, func(a *models.Agent) { a.Workdir = dir })
	task := h.task("Fix the add function and its tests", "dev-py", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE"},
		Verification: contract.Verification{Type: contract.VerifyAuto},
	})
	h.start()
	got := h.settled(task.ID, 3*time.Minute)
	atts := h.attempts(task.ID)
	if got.State == models.TaskVerified {
		t.Fatalf("a broken calc.py was verified on planted bytecode; attempts %+v", atts)
	}
	if len(atts) == 0 || atts[0].Stage != models.StageVerify {
		t.Fatalf("want attempt 1 failed at verify (pytest on the broken source), got %+v", atts)
	}
}
