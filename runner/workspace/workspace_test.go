package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

func newManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func prepare(t *testing.T, m *Manager, req Request) *Workspace {
	t.Helper()
	ws, err := m.Prepare(context.Background(), req)
	if err != nil {
		t.Fatalf("Prepare(%+v): %v", req, err)
	}
	return ws
}

// gitRepo makes a repository with one commit, as an agent's checkout would be.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required")
		}
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		if _, err := (&Manager{}).git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "readme"},
	} {
		if _, err := (&Manager{}).git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func isDir(t *testing.T, p string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a directory: %v", p, err)
	}
}

func TestFreshDirectory(t *testing.T) {
	m := newManager(t)
	ws := prepare(t, m, Request{TaskID: 7, Attempt: 1})
	if ws.Dir != filepath.Join(m.Root(), "tasks", "7") || ws.MetaDir != filepath.Join(m.Root(), "meta", "7") {
		t.Fatalf("ws = %+v", ws)
	}
	isDir(t, ws.Dir)
	isDir(t, ws.MetaDir)
	if ws.BriefPath(2) != filepath.Join(ws.MetaDir, "brief-2.md") || ws.LogPath(3) != filepath.Join(ws.MetaDir, "attempt-3.log") {
		t.Fatalf("paths: %s %s", ws.BriefPath(2), ws.LogPath(3))
	}
	if err := m.Cleanup(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	isDir(t, ws.MetaDir) // briefs and logs are evidence; Cleanup keeps them
}

func TestReusedAcrossAttempts(t *testing.T) {
	m := newManager(t)
	ws1 := prepare(t, m, Request{TaskID: 9, Attempt: 1})
	out := filepath.Join(ws1.Dir, "out.md")
	if err := os.WriteFile(out, []byte("first try"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws2 := prepare(t, m, Request{TaskID: 9, Attempt: 2})
	if ws2.Dir != ws1.Dir {
		t.Fatalf("attempt 2 in %s, attempt 1 in %s", ws2.Dir, ws1.Dir)
	}
	if b, err := os.ReadFile(filepath.Join(ws2.Dir, "out.md")); err != nil || string(b) != "first try" {
		t.Fatalf("previous output lost: %q %v", b, err)
	}
	if other := prepare(t, m, Request{TaskID: 10, Attempt: 1}); other.Dir == ws1.Dir {
		t.Fatal("two tasks share a directory")
	}
}

func TestAgentWorkdir(t *testing.T) {
	m := newManager(t)
	wd := t.TempDir()
	ws := prepare(t, m, Request{TaskID: 3, Attempt: 1, AgentWorkdir: wd})
	want, _ := filepath.EvalSymlinks(wd)
	if ws.Dir != want {
		t.Fatalf("Dir = %s, want %s", ws.Dir, want)
	}
	// Briefs and logs never go into the agent's directory.
	if ws.MetaDir != filepath.Join(m.Root(), "meta", "3") {
		t.Fatalf("MetaDir = %s", ws.MetaDir)
	}
	isDir(t, ws.MetaDir)
	// The runner's own directory for the task is not made when the worker runs in its
	// agent's: a task's files are what it needs.
	if _, err := os.Stat(filepath.Join(m.Root(), "tasks", "3")); !os.IsNotExist(err) {
		t.Fatalf("tasks/3 was made for a task that runs in its agent's workdir: %v", err)
	}
	if ws.StartedEmpty(1) || ws.StartedEmpty(2) {
		t.Fatal("the agent's workdir is not a directory that started empty")
	}
}

// TestStartedEmpty: only the runner's own directory for the task, made by the first
// attempt's Prepare, started empty; one left by an earlier database that reused the
// id, and another task's directory shared by a review fix, did not.
func TestStartedEmpty(t *testing.T) {
	m := newManager(t)
	ws := prepare(t, m, Request{TaskID: 4, Attempt: 1})
	if !ws.StartedEmpty(1) {
		t.Fatal("a directory Prepare made is not reported as started empty")
	}
	if again := prepare(t, m, Request{TaskID: 4, Attempt: 2}); !again.StartedEmpty(2) {
		t.Fatal("a later attempt of a task whose directory started empty is not reported so")
	}
	if again := prepare(t, m, Request{TaskID: 4, Attempt: 1}); again.StartedEmpty(1) {
		t.Fatal("a first attempt that found the directory already there reports it started empty")
	}
	shared := prepare(t, m, Request{TaskID: 4, Attempt: 1})
	shared.TaskID = 5 // a review fix working in task 4's directory
	if shared.StartedEmpty(2) {
		t.Fatal("another task's directory is reported as started empty")
	}
}

func TestWorktreePerTask(t *testing.T) {
	m := newManager(t)
	repo := gitRepo(t)
	ctx := context.Background()
	a := prepare(t, m, Request{TaskID: 1, Attempt: 1, AgentWorkdir: repo, Worktree: true})
	b := prepare(t, m, Request{TaskID: 2, Attempt: 1, AgentWorkdir: repo, Worktree: true})
	if a.Dir == b.Dir {
		t.Fatal("two tasks got one worktree")
	}
	for _, ws := range []*Workspace{a, b} {
		if !strings.HasPrefix(ws.Dir, filepath.Join(m.Root(), "worktrees")+"/") {
			t.Fatalf("worktree outside the data dir: %s", ws.Dir)
		}
		if b, err := os.ReadFile(filepath.Join(ws.Dir, "README.md")); err != nil || string(b) != "repo\n" {
			t.Fatalf("worktree %s lacks HEAD's files: %v", ws.Dir, err)
		}
		if ws.MetaDir == ws.Dir || strings.HasPrefix(ws.MetaDir, ws.Dir) {
			t.Fatalf("metadata inside the worktree: %s", ws.MetaDir)
		}
	}
	// Work in one worktree is invisible in the other and survives a second attempt.
	if err := os.WriteFile(filepath.Join(a.Dir, "work.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "work.txt")); !os.IsNotExist(err) {
		t.Fatal("worktrees share files")
	}
	again := prepare(t, m, Request{TaskID: 1, Attempt: 2, AgentWorkdir: repo, Worktree: true})
	if again.Dir != a.Dir {
		t.Fatalf("attempt 2 worktree %s, attempt 1 %s", again.Dir, a.Dir)
	}
	if _, err := os.Stat(filepath.Join(again.Dir, "work.txt")); err != nil {
		t.Fatal("attempt 2 lost attempt 1's changes")
	}
	list, err := (&Manager{}).git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil || strings.Count(string(list), "worktree ") != 3 {
		t.Fatalf("git worktree list:\n%s %v", list, err)
	}

	if err := m.Cleanup(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Dir); !os.IsNotExist(err) {
		t.Fatalf("worktree %s still there", a.Dir)
	}
	// Removed behind git's back: Cleanup still succeeds and git forgets it.
	if err := os.RemoveAll(b.Dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(ctx, b); err != nil {
		t.Fatal(err)
	}
	list, _ = (&Manager{}).git(ctx, repo, "worktree", "list", "--porcelain")
	if n := strings.Count(string(list), "worktree "); n != 1 {
		t.Fatalf("%d worktrees left:\n%s", n, list)
	}
	// A half-made worktree directory is replaced, not trusted.
	half := filepath.Join(m.Root(), "worktrees", "5")
	if err := os.MkdirAll(half, 0o750); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(half, "junk"), nil, 0o644)
	ws := prepare(t, m, Request{TaskID: 5, Attempt: 1, AgentWorkdir: repo, Worktree: true})
	if _, err := os.Stat(filepath.Join(ws.Dir, "README.md")); err != nil {
		t.Fatal("half-made worktree not replaced")
	}
}

func TestWorktreeOfNonRepoFails(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	m := newManager(t)
	_, err := m.Prepare(context.Background(), Request{TaskID: 1, Attempt: 1, AgentWorkdir: t.TempDir(), Worktree: true})
	if err == nil || models.ErrorCode(err) != models.EINTERNAL {
		t.Fatalf("err = %v", err)
	}
}

func TestPrepareRejectsBadRequests(t *testing.T) {
	m := newManager(t)
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for name, req := range map[string]Request{
		"no task":           {Attempt: 1},
		"no attempt":        {TaskID: 1},
		"relative workdir":  {TaskID: 1, Attempt: 1, AgentWorkdir: "repo"},
		"worktree, no dir":  {TaskID: 1, Attempt: 1, Worktree: true},
		"missing workdir":   {TaskID: 1, Attempt: 1, AgentWorkdir: filepath.Join(file, "nope")},
		"workdir is a file": {TaskID: 1, Attempt: 1, AgentWorkdir: file},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := m.Prepare(context.Background(), req)
			if models.ErrorCode(err) != models.EINVALID {
				t.Fatalf("err = %v", err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Prepare(ctx, Request{TaskID: 1, Attempt: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	if _, err := New(""); models.ErrorCode(err) != models.EINVALID {
		t.Fatalf("New(\"\") = %v", err)
	}
}

func TestResolve(t *testing.T) {
	m := newManager(t)
	ws := prepare(t, m, Request{TaskID: 1, Attempt: 1})
	outside := t.TempDir()
	mustSymlink := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(ws.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink("/etc", "etc")
	mustSymlink(filepath.Join(outside, "new.md"), "dangling.md")
	mustSymlink("..", "up")
	os.MkdirAll(filepath.Join(ws.Dir, "docs", "real"), 0o750)
	mustSymlink("real", filepath.Join("docs", "inside"))
	mustSymlink(filepath.Join(ws.Dir, "docs"), "docs-abs")

	for _, bad := range []string{
		"../x", "/etc/passwd", "etc", "etc/passwd", "etc/new/file.md", "a/../../x", "..",
		"dangling.md", "up/tasks", ".countersign/brief-1.md", "", "a\x00b",
	} {
		_, err := ws.Resolve(bad)
		var me *models.Error
		if !errors.As(err, &me) || me.Code != models.EINVALID {
			t.Errorf("Resolve(%q) = %v, want EINVALID", bad, err)
		}
	}
	if _, err := ws.Resolve("../x"); err == nil || !strings.Contains(err.Error(), "path escapes the workspace") {
		t.Errorf("message = %v", err)
	}

	for rel, want := range map[string]string{
		"a/b.md":             filepath.Join(ws.Dir, "a", "b.md"),
		"./a/./b.md":         filepath.Join(ws.Dir, "a", "b.md"),
		"a/../b.md":          filepath.Join(ws.Dir, "b.md"),
		"docs/inside/x.md":   filepath.Join(ws.Dir, "docs", "real", "x.md"),
		"docs-abs/real/y.md": filepath.Join(ws.Dir, "docs", "real", "y.md"),
		".":                  ws.Dir,
	} {
		got, err := ws.Resolve(rel)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", rel, got, err, want)
		}
	}
}

func TestResolveInAgentWorkdir(t *testing.T) {
	m := newManager(t)
	wd := t.TempDir()
	ws := prepare(t, m, Request{TaskID: 2, Attempt: 1, AgentWorkdir: wd})
	got, err := ws.Resolve("notes/out.md")
	if err != nil || !strings.HasPrefix(got, ws.Dir+"/") {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	// The data dir is outside an agent's workdir, so the task's briefs are out of reach.
	if _, err := ws.Resolve(ws.BriefPath(1)); err == nil {
		t.Fatal("absolute brief path accepted")
	}
}

// Open refuses a path that became a symbolic link after Resolve checked it — the file
// itself or a directory on the way — so the runner never reads, with its own rights,
// what a worker's link points at.
func TestOpenRefusesLinksMadeAfterResolve(t *testing.T) {
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Prepare(t.Context(), Request{TaskID: 9, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "countersign.db")
	if err := os.WriteFile(secret, []byte("the judge's records"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws.Dir, "out"), 0o750); err != nil {
		t.Fatal(err)
	}
	abs, err := ws.Resolve("out/result.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte("fine"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := ws.ReadFile(abs); err != nil || string(b) != "fine" {
		t.Fatalf("a regular file: %q, %v", b, err)
	}
	// The file swapped for a link.
	if err := os.Remove(abs); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, abs); err != nil {
		t.Fatal(err)
	}
	if b, err := ws.ReadFile(abs); err == nil {
		t.Fatalf("read through a link to %s: %q", secret, b)
	}
	// The directory on the way swapped for a link.
	if err := os.RemoveAll(filepath.Join(ws.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(ws.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(secret, filepath.Join(filepath.Dir(secret), "result.md")); err != nil {
		t.Fatal(err)
	}
	if b, err := ws.ReadFile(abs); err == nil {
		t.Fatalf("read through a linked directory: %q", b)
	}
}
