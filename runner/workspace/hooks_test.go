package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWorktreeRunsNoHooks: the agent's repository belongs to a worker, which can write
// its hooks; creating a task's worktree must not run them (they would see the runner's
// environment, secrets included).
func TestWorktreeRunsNoHooks(t *testing.T) {
	repo := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nenv > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COUNTERSIGN_TEST_SECRET", "do-not-leak")
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Prepare(context.Background(), Request{TaskID: 7, Attempt: 1, AgentWorkdir: repo, Worktree: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, ".git")); err != nil {
		t.Fatalf("no worktree: %v", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the repository's post-checkout hook ran while the runner created the worktree")
	}
}
