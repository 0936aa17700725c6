//go:build linux && (amd64 || arm64)

package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/sandbox"
)

// TestNotReadyConfined: readiness looks for a verify tool as the confined check command
// will: a no-such-tool-xyz on the runner's PATH that is a link to a file out of the
// sandbox's reach is not ready (and, run, would fail); once the tool on PATH is a file
// the sandbox can read, "check again" runs the task, confined, and it is verified.
func TestNotReadyConfined(t *testing.T) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	bin, elsewhere := t.TempDir(), t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")) // before the pool starts
	h := newHarness(t, "sqlite", func(c *Config) {
		c.Sandbox = sb
		c.JudgePath = append([]string{bin}, judge.DefaultPath...) // verify commands see no other PATH
	})
	tool := filepath.Join(bin, "no-such-tool-xyz")
	hidden := filepath.Join(elsewhere, "no-such-tool-xyz")
	body := []byte("#!/bin/sh\n[ \"$1\" = --check ] && echo checked > checked.txt\n")
	must(t, os.WriteFile(hidden, body, 0o755))
	must(t, os.Symlink(hidden, tool))
	h.worker("dev", "developer", `cat >/dev/null; echo ran >> ran.txt; printf '%0120d\n' 0 > "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE`)
	c := fileContract()
	c.Completion.Verify = []string{"no-such-tool-xyz --check"}
	task := h.task("needs a tool the sandbox can reach", "developer", c)
	h.start()
	marker := filepath.Join(h.root, "work", "tasks", itoa(task.ID), "ran.txt")
	assertNotReady(t, h, h.wait(task.ID, models.TaskBlocked, models.TaskVerified), marker,
		"needs no-such-tool-xyz, found at "+tool+" but out of the sandbox's reach ("+hidden+")")

	must(t, os.Remove(tool))
	must(t, os.WriteFile(tool, body, 0o755))
	if _, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{}); err != nil {
		t.Fatalf("check again: %v", err)
	}
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskVerified {
		t.Fatalf("state %s; attempts %+v", got.State, h.attempts(task.ID))
	}
	if n := lineCount(t, marker); n != 1 {
		t.Errorf("the worker ran %d times, want 1", n)
	}
	// The tool ran in the judge's view, not the workspace: its verdict is the evidence.
	if atts := h.attempts(task.ID); len(atts) == 0 || len(atts[len(atts)-1].Checks) == 0 ||
		!slices.ContainsFunc(atts[len(atts)-1].Checks, func(c models.CheckResult) bool {
			return c.Stage == models.StageVerify && c.Verdict == models.VerdictPass
		}) {
		t.Errorf("the tool did not run and pass: attempts %+v", atts)
	}
}
