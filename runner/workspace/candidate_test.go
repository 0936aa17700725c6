package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/runner/judge"
)

// candidateInfo is ci with the tree of a candidate snapshot of ws, taken by a judge
// store as the runner does — the branch's tip imported, the worktree snapshot under
// its rules with the meta dir left out — and exported into ws's repository.
func candidateInfo(t *testing.T, m *Manager, ws *Workspace, ci CommitInfo) CommitInfo {
	t.Helper()
	ci.Tree = candidate(t, m, ws).Tree
	return ci
}

// candidate snapshots ws as the runner does and exports it into ws's repository.
func candidate(t *testing.T, m *Manager, ws *Workspace) judge.Snapshot {
	t.Helper()
	ctx := context.Background()
	s, err := judge.OpenStore(ctx, m.Root())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tip := gitT(t, ws.Repo(), "rev-parse", "refs/heads/"+ws.Branch())
	if err := s.Import(ctx, ws.Repo(), tip); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx, judge.SnapshotRequest{Dir: ws.Dir, IgnoreFrom: tip, Parent: tip, Exclude: []string{MetaDirName},
		Ref: fmt.Sprintf("refs/countersign/tasks/%d/candidate", ws.TaskID)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, ws.Repo(), snap.Commit); err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestLandedTreeIsTheJudgedTree: what lands is exactly the candidate the judge
// snapshot. The hostile worker hides the helper its code needs behind its own
// .gitignore, and something that runs during the checks rewrites a file after the
// snapshot; the landed commit's tree is the snapshot's tree all the same: the helper
// in, the rewrite out. The control is the old landing (the worktree's tree as `git add
// -A` sees it after the checks), which differs on both counts.
func TestLandedTreeIsTheJudgedTree(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 11, "main")
	write(t, filepath.Join(ws.Dir, "app.py"), "import helper\n")
	write(t, filepath.Join(ws.Dir, "helper.py"), "def f(): return 1\n")
	write(t, filepath.Join(ws.Dir, ".gitignore"), "*.log\nhelper.py\n")
	snap := candidate(t, m, ws)
	// A check's process writes after the candidate was fixed.
	write(t, filepath.Join(ws.Dir, "f.txt"), "rewritten during the checks\n")

	// Control: the worktree's tree as the old landing took it.
	old, err := m.WorktreeTree(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if old == snap.Tree {
		t.Fatal("control: the worktree's tree equals the judged one, so this test could not fail")
	}
	if _, err := gitTry(repo, "cat-file", "-e", old+":helper.py"); err == nil {
		t.Fatal("control: git add -A took helper.py despite the worker's .gitignore")
	}
	if gitT(t, repo, "show", old+":f.txt") != "rewritten during the checks" {
		t.Fatal("control: the worktree's tree lacks the rewrite")
	}

	info := verifiedInfo(11, 1)
	info.Tree = snap.Tree
	c, err := m.CommitVerified(ctx, ws, info)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "rev-parse", c+"^{tree}"); got != snap.Tree {
		t.Fatalf("landed tree %s, judged tree %s", got, snap.Tree)
	}
	if got := gitT(t, repo, "show", c+":helper.py"); got != "def f(): return 1" {
		t.Fatalf("helper.py landed as %q", got)
	}
	if got := gitT(t, repo, "show", c+":f.txt"); got != "one\ntwo\nthree" {
		t.Fatalf("f.txt landed as %q, not as judged", got)
	}
}
