package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/workspace"
)

// TestWorkspacesPrune: `workspaces prune` removes the worktree of a task that is gone
// and keeps the one of an open task, and keeps the removed task's branch.
func TestWorkspacesPrune(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out := mustCLI(t, dir, "", "task", "import", "testdata/orphans/task.md")
	m := regexp.MustCompile(`task (\d+) created`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("task import: %s", out)
	}
	open := m[1]
	openID, _ := strconv.ParseInt(open, 10, 64)
	ws, err := workspace.New(filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []int64{openID, 999} {
		if _, err := ws.Prepare(ctx, workspace.Request{TaskID: id, Attempt: 1, AgentWorkdir: repo, Worktree: true,
			Branch: "countersign/task-" + strconv.FormatInt(id, 10), Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	out = mustCLI(t, dir, "", "workspaces", "prune")
	if !strings.Contains(out, "1 worktree(s) removed") {
		t.Fatalf("prune: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "worktrees", "999")); !os.IsNotExist(err) {
		t.Errorf("the gone task's worktree is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "worktrees", open)); err != nil {
		t.Errorf("the open task's worktree was removed: %v", err)
	}
	cmd := exec.Command("git", "rev-parse", "--verify", "-q", "countersign/task-999")
	cmd.Dir = repo
	if err := cmd.Run(); err != nil {
		t.Errorf("the pruned task's branch is gone: %v", err)
	}
}
