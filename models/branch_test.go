package models

import "testing"

func TestBranchNameProblem(t *testing.T) {
	for _, ok := range []string{"main", "countersign/task-42", "release-1.2", "feature/x_y"} {
		if msg := BranchNameProblem(ok); msg != "" {
			t.Errorf("%q refused: %s", ok, msg)
		}
	}
	for _, bad := range []string{"", "-x", "a..b", "a b", ";rm -rf /", "a//b", "a/.b", "x@{1}", "x/", "x.", "x.lock", "HEAD~1", "a:b", "$(id)"} {
		if BranchNameProblem(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
	a := &Agent{Name: "w", Kind: KindWorker, Roles: []string{"dev"}, Concurrency: 1, Command: "x", TargetBranch: "main"}
	if err := a.Validate(); ErrorCode(err) != EINVALID {
		t.Fatalf("a target branch without a worktree: %v", err)
	}
}
