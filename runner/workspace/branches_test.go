package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
)

func TestPushToBareRemote(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitT(t, repo, "init", "-q", "--bare", bare)
	gitT(t, repo, "remote", "add", "origin", bare)
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "g.txt"), "g\n")
	c := commitVerified(t, m, ws)
	if err := m.Push(ctx, repo, "origin", ws.Branch()); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, bare, "rev-parse", "refs/heads/"+ws.Branch()); got != c {
		t.Fatalf("remote has %s, want %s", got, c)
	}
	if err := m.Push(ctx, repo, "nosuch", ws.Branch()); models.ErrorCode(err) != models.EINVALID {
		t.Fatalf("unknown remote: %v", err)
	}
}

func TestPruneKeepsWhatIsNeeded(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	for id := int64(1); id <= 3; id++ {
		branchTask(t, m, repo, id, "main")
	}
	if err := os.MkdirAll(filepath.Join(m.Root(), "worktrees", "notes"), 0o750); err != nil {
		t.Fatal(err)
	}
	removed, err := m.Prune(ctx, func(id int64) bool { return id == 2 })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(m.Root(), "worktrees", "1"), filepath.Join(m.Root(), "worktrees", "3")}
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, name := range []string{"2", "notes"} {
		if _, err := os.Stat(filepath.Join(m.Root(), "worktrees", name)); err != nil {
			t.Fatalf("%s was removed", name)
		}
	}
	list := gitT(t, repo, "worktree", "list", "--porcelain")
	if strings.Count(list, "worktree ") != 2 || !strings.Contains(list, filepath.Join(m.Root(), "worktrees", "2")) {
		t.Fatalf("git still knows the pruned worktrees:\n%s", list)
	}
	// Their branches stay: they hold the work.
	for _, b := range []string{"countersign/task-1", "countersign/task-3"} {
		gitT(t, repo, "rev-parse", "--verify", "refs/heads/"+b)
	}

	// Remove drops a worktree and, asked, its branch.
	if err := m.Remove(ctx, repo, 2, "countersign/task-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.Root(), "worktrees", "2")); !os.IsNotExist(err) {
		t.Fatal("worktree 2 still there")
	}
	if _, err := gitTry(repo, "rev-parse", "--verify", "refs/heads/countersign/task-2"); err == nil {
		t.Fatal("branch of task 2 still there")
	}
	if err := m.Remove(ctx, repo, 2, "countersign/task-2"); err != nil {
		t.Fatalf("removing again: %v", err)
	}
}

func TestDiskUsage(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	ws := prepare(t, m, Request{TaskID: 1, Attempt: 1})
	write(t, filepath.Join(ws.Dir, "a"), strings.Repeat("x", 1000))
	write(t, filepath.Join(m.Root(), "worktrees", "2", "b"), strings.Repeat("y", 234))
	big := filepath.Join(t.TempDir(), "big")
	write(t, big, strings.Repeat("z", 1<<20))
	if err := os.Symlink(filepath.Dir(big), filepath.Join(ws.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(big, filepath.Join(m.Root(), "worktrees", "2", "big")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.MetaDir, "attempt-1.log"), strings.Repeat("l", 5000)) // not a workspace
	if n, err := m.DiskUsage(); err != nil || n != 1234 {
		t.Fatalf("DiskUsage = %d, %v; want 1234", n, err)
	}
}

func TestCompareDiffAndDefaultTarget(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	if got, err := m.DefaultTarget(ctx, repo); err != nil || got != "main" {
		t.Fatalf("DefaultTarget = %q, %v", got, err)
	}
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nchanged by the task\nthree\n")
	c := commitVerified(t, m, ws)
	if a, b, err := m.Compare(ctx, repo, "main", ws.Branch()); err != nil || a != 1 || b != 0 {
		t.Fatalf("Compare = %d ahead %d behind, %v", a, b, err)
	}
	write(t, filepath.Join(repo, "x.txt"), "x\n")
	gitT(t, repo, "add", "x.txt")
	gitT(t, repo, "commit", "-q", "-m", "main moves")
	if a, b, err := m.Compare(ctx, repo, "main", ws.Branch()); err != nil || a != 1 || b != 1 {
		t.Fatalf("Compare = %d ahead %d behind, %v", a, b, err)
	}
	d, cut, err := m.Diff(ctx, repo, ws.BaseCommit(), ws.Branch(), 1<<20)
	if err != nil || cut || !strings.Contains(d, "+changed by the task") || !strings.Contains(d, "-two") || strings.Contains(d, "x.txt") {
		t.Fatalf("Diff = %q, %v, %v", d, cut, err)
	}
	if d, cut, err := m.Diff(ctx, repo, ws.BaseCommit(), c, 10); err != nil || !cut || len(d) != 10 {
		t.Fatalf("bounded Diff = %q, %v, %v", d, cut, err)
	}
	if tree, err := m.TreeOf(ctx, repo, c); err != nil || tree != gitT(t, repo, "rev-parse", c+"^{tree}") {
		t.Fatalf("TreeOf = %s, %v", tree, err)
	}
	gitT(t, repo, "checkout", "-q", "--detach")
	if _, err := m.DefaultTarget(ctx, repo); models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("detached: %v", err)
	}
}

// Hostile names are refused with EINVALID before any git command runs.
func TestHostileNamesNeverReachGit(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	c := commitVerified(t, m, ws)
	var ran [][]string
	m.trace = func(argv []string) { ran = append(ran, argv) }
	// Refused wherever a name is taken: as a branch, a revision, a remote or a refspec.
	hostile := []string{"a..b", "has space", "-x", "--upload-pack=touch /tmp/pwned", ";rm -rf /", "x;rm -rf ~", "a/../../b",
		"new\nline", "tab\there", "ü", "x$(id)", "`id`", "a|b"}
	// Refused as branch names and revisions only (a remote may be called HEAD).
	notBranches := []string{"HEAD", "x.lock", ".hidden", "a//b", "trailing/", "x@{1}", "a~1", "a^", "a:b", "refs/tags/v1", "a*", "a?", "a[b", "a\\b"}
	for _, name := range append(append([]string{""}, hostile...), notBranches...) {
		anywhere := slices.Contains(hostile, name)
		calls := hostileCalls(ctx, m, repo, ws, c, name)
		if name == "a:b" {
			delete(calls, "Push refspec") // a well-formed refspec: push a to b
		}
		if anywhere || name == "" {
			calls["Push remote"] = func() error { return m.Push(ctx, repo, name, ws.Branch()) }
		}
		for what, call := range calls {
			if name == "" && (what == "Prepare branch" || what == "Prepare base" || what == "Remove") {
				continue // empty means none
			}
			if err := call(); models.ErrorCode(err) != models.EINVALID {
				t.Errorf("%s %q: err = %v, want EINVALID", what, name, err)
			}
		}
	}
	if len(ran) != 0 {
		t.Fatalf("git ran with hostile input: %q", ran)
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("/tmp/pwned exists")
	}
	// And the validator is no looser than git's own.
	for _, name := range append(hostile, notBranches...) {
		if ValidBranch(name) == nil {
			t.Errorf("ValidBranch(%q) accepted it", name)
		}
	}
	for _, ok := range []string{"countersign/task-42", "main", "feature/x_y-1.2", "_x"} {
		if err := ValidBranch(ok); err != nil {
			t.Errorf("ValidBranch(%q) = %v", ok, err)
		}
		if _, err := gitTry(repo, "check-ref-format", "--branch", ok); err != nil {
			t.Errorf("git refuses %q which ValidBranch accepts", ok)
		}
	}
}

// The whole landing runs confined: each operation with its own grants, and a grant
// left out is enforced.
func TestConfinedLanding(t *testing.T) {
	t.Parallel()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Skipf("no sandbox on this machine: %s", sb.Status())
	}
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	m.Confine(sb)
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitT(t, repo, "init", "-q", "--bare", bare)
	gitT(t, repo, "remote", "add", "origin", bare)
	gitT(t, repo, "branch", "release", "main")

	a := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(a.Dir, "f.txt"), "one\nconfined\nthree\n")
	ca := commitVerified(t, m, a)
	if st := gitT(t, a.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status after a confined commit: %s", st)
	}
	b := branchTask(t, m, repo, 2, ca)
	write(t, filepath.Join(b.Dir, "g.txt"), "g\n")
	cb := commitVerified(t, m, b)
	if res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: a.Branch(), Verified: ca, FastForward: true}); err != nil || !res.CheckedOut {
		t.Fatalf("confined merge into the checkout: %+v %v", res, err)
	}
	if res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: b.Branch(), Verified: cb}); err != nil || res.CheckedOut {
		t.Fatalf("confined merge commit: %+v %v", res, err)
	}
	if err := m.Push(ctx, repo, "origin", "release"); err != nil {
		t.Fatalf("confined push: %v", err)
	}
	if got := gitT(t, bare, "rev-parse", "release"); got != gitT(t, repo, "rev-parse", "release") {
		t.Fatal("push did not land")
	}
	if _, _, err := m.Compare(ctx, repo, "main", "release"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Diff(ctx, repo, "main", "release", 1000); err != nil {
		t.Fatal(err)
	}
	if removed, err := m.Prune(ctx, func(int64) bool { return false }); err != nil || len(removed) != 2 {
		t.Fatalf("confined prune: %v %v", removed, err)
	}
	if list := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("confined prune left git's records:\n%s", list)
	}

	// The grants are real: the merge's update-ref without write on refs fails, with it
	// succeeds.
	gitDir := filepath.Join(repo, ".git")
	upd := []string{"update-ref", "refs/heads/probe", ca}
	if _, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: upd}); err == nil {
		t.Fatal("a confined git without write grants moved a ref")
	}
	if _, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, write: storeWrite(gitDir), args: upd}); err != nil {
		t.Fatalf("with the store's grants: %v", err)
	}
	// The commit's grants do not include the worktree: git cannot write there.
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, repo, "worktree", "add", "-q", "--detach", wt, "main")
	index := filepath.Join(t.TempDir(), "index")
	rt := exec.Command("git", "--git-dir="+gitDir, "read-tree", "main")
	rt.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := rt.CombinedOutput(); err != nil {
		t.Fatalf("read-tree: %v %s", err, out)
	}
	checkout := func(write []string) error {
		_, err := m.run(ctx, gitRun{dir: wt, read: []string{gitDir, wt}, write: write, env: []string{"GIT_INDEX_FILE=" + index},
			args: []string{"--git-dir=" + gitDir, "--work-tree=" + wt, "checkout-index", "-f", "--", "f.txt"}})
		return err
	}
	os.Remove(filepath.Join(wt, "f.txt"))
	if err := checkout(append(storeWrite(gitDir), filepath.Dir(index))); err == nil {
		t.Fatal("git wrote the worktree with the commit's read-only grant on it")
	}
	if err := checkout(append(storeWrite(gitDir), filepath.Dir(index), wt)); err != nil {
		t.Fatalf("with a write grant on the worktree: %v", err)
	}
}

// hostileCalls is every Manager call that takes name, as a branch, a revision, a
// remote or a refspec, next to the valid names of a task on branch ws.Branch()
// verified at c.
func hostileCalls(ctx context.Context, m *Manager, repo string, ws *Workspace, c, name string) map[string]func() error {
	return map[string]func() error{
		"Prepare branch": func() error {
			_, err := m.Prepare(ctx, Request{TaskID: 5, Attempt: 1, AgentWorkdir: repo, Worktree: true, Branch: name, Base: "main"})
			return err
		},
		"Prepare base": func() error {
			_, err := m.Prepare(ctx, Request{TaskID: 5, Attempt: 1, AgentWorkdir: repo, Worktree: true, Branch: "ok", Base: name})
			return err
		},
		"Merge target": func() error {
			_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: name, Branch: ws.Branch(), Verified: c})
			return err
		},
		"Merge branch": func() error {
			_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: name, Verified: c})
			return err
		},
		"Merge verified": func() error {
			_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: name})
			return err
		},
		"Push refspec": func() error { return m.Push(ctx, repo, "origin", name) },
		"Push dst":     func() error { return m.Push(ctx, repo, "origin", ws.Branch()+":"+name) },
		"Compare": func() error {
			_, _, err := m.Compare(ctx, repo, "main", name)
			return err
		},
		"Diff": func() error {
			_, _, err := m.Diff(ctx, repo, name, ws.Branch(), 100)
			return err
		},
		"TreeOf": func() error {
			_, err := m.TreeOf(ctx, repo, name)
			return err
		},
		"Remove": func() error { return m.Remove(ctx, repo, 1, name) },
	}
}
