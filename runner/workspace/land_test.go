package workspace

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
)

// gitT runs git for a test's own setup and checks (never through the manager), as a
// person or a worker would, and returns its trimmed output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Someone", "GIT_AUTHOR_EMAIL=someone@example.com",
		"GIT_COMMITTER_NAME=Someone", "GIT_COMMITTER_EMAIL=someone@example.com")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mainRepo is a person's checkout with main checked out: f.txt of three lines and a
// .gitignore for *.log.
func mainRepo(t *testing.T) string {
	t.Helper()
	gitRepo(t) // skips without git
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "f.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-q", "-m", "base")
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

var agent = Identity{Name: "quinn (worker agent)", Email: "quinn@agents.countersign"}

func verifiedInfo(task int64, attempt int) CommitInfo {
	return CommitInfo{
		Author:  agent,
		Subject: fmt.Sprintf("Task %d: change f.txt\nwith a second line that must not survive", task),
		Trailers: []Trailer{
			{TrailerTask, fmt.Sprint(task)},
			{TrailerAttempt, fmt.Sprint(attempt)},
			{TrailerVerifiedBy, "go test ./...; review by rita"},
		},
	}
}

func branchTask(t *testing.T, m *Manager, repo string, id int64, base string) *Workspace {
	t.Helper()
	return prepare(t, m, Request{TaskID: id, Attempt: 1, AgentWorkdir: repo, Worktree: true,
		Branch: fmt.Sprintf("countersign/task-%d", id), Base: base})
}

func commitVerified(t *testing.T, m *Manager, ws *Workspace) string {
	t.Helper()
	c, err := m.CommitVerified(context.Background(), ws, candidateInfo(t, m, ws, verifiedInfo(ws.TaskID, 1)))
	if err != nil {
		t.Fatalf("CommitVerified: %v", err)
	}
	return c
}

// A worktree task works on a branch of its own, made from the target, and its later
// attempts keep it — also when the worktree was removed between them.
func TestWorktreeTaskOnItsOwnBranch(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	mainTip := gitT(t, repo, "rev-parse", "main")
	ws := branchTask(t, m, repo, 42, "main")
	if ws.Branch() != "countersign/task-42" || ws.BaseCommit() != mainTip || ws.Repo() != repo {
		t.Fatalf("branch %q base %q repo %q; want countersign/task-42, %s, %s", ws.Branch(), ws.BaseCommit(), ws.Repo(), mainTip, repo)
	}
	if head := gitT(t, ws.Dir, "symbolic-ref", "HEAD"); head != "refs/heads/countersign/task-42" {
		t.Fatalf("worktree HEAD = %s", head)
	}
	if got := gitT(t, repo, "rev-parse", "countersign/task-42"); got != mainTip {
		t.Fatalf("branch starts at %s, want main's %s", got, mainTip)
	}
	// The target moves on; attempt 2 still reports where the task started.
	write(t, filepath.Join(repo, "other.txt"), "x\n")
	gitT(t, repo, "add", "other.txt")
	gitT(t, repo, "commit", "-q", "-m", "main moves on")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nTWO\nthree\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "worker's own commit")
	again := prepare(t, m, Request{TaskID: 42, Attempt: 2, AgentWorkdir: repo, Worktree: true, Branch: "countersign/task-42", Base: "main"})
	if again.Dir != ws.Dir || again.BaseCommit() != mainTip {
		t.Fatalf("attempt 2: dir %s base %s; want %s %s", again.Dir, again.BaseCommit(), ws.Dir, mainTip)
	}
	// The worktree removed (its branch kept): the next attempt checks the branch out again.
	if err := m.Cleanup(ctx, ws); err != nil {
		t.Fatal(err)
	}
	third := prepare(t, m, Request{TaskID: 42, Attempt: 3, AgentWorkdir: repo, Worktree: true, Branch: "countersign/task-42", Base: "main"})
	if b, _ := os.ReadFile(filepath.Join(third.Dir, "f.txt")); string(b) != "one\nTWO\nthree\n" || third.BaseCommit() != mainTip {
		t.Fatalf("attempt 3 lost the branch's work: %q, base %s", b, third.BaseCommit())
	}
	// The base is gone (a step's target renamed): later attempts go on, base unknown.
	fourth := prepare(t, m, Request{TaskID: 42, Attempt: 4, AgentWorkdir: repo, Worktree: true, Branch: "countersign/task-42", Base: "gone"})
	if fourth.Dir != third.Dir || fourth.BaseCommit() != "" {
		t.Fatalf("attempt 4: %s base %q", fourth.Dir, fourth.BaseCommit())
	}
	// Without a branch, as before: detached at HEAD.
	old := prepare(t, m, Request{TaskID: 43, Attempt: 1, AgentWorkdir: repo, Worktree: true})
	if _, err := gitTry(old.Dir, "symbolic-ref", "-q", "HEAD"); err == nil || old.Branch() != "" || old.BaseCommit() != "" {
		t.Fatalf("a worktree without a branch is not detached (branch %q)", old.Branch())
	}
	// A base that is not there.
	_, err := m.Prepare(ctx, Request{TaskID: 44, Attempt: 1, AgentWorkdir: repo, Worktree: true, Branch: "countersign/task-44", Base: "nope"})
	if models.ErrorCode(err) != models.ENOTFOUND {
		t.Fatalf("missing base: %v", err)
	}
}

// The verified commit holds the files as they are, carries the three trailers in
// order, names the agent as author, and leaves the worktree clean; committing the same
// verification again changes nothing.
func TestCommitVerifiedCarriesTrailers(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 7, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\n2\nthree\n")
	write(t, filepath.Join(ws.Dir, "new/added.go"), "package x\n")
	write(t, filepath.Join(ws.Dir, "debug.log"), "ignored\n")
	if err := os.Remove(filepath.Join(ws.Dir, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.Dir, ".gitignore"), "*.log\n") // deleted and re-made: unchanged
	c := commitVerified(t, m, ws)

	if got := gitT(t, repo, "rev-parse", "countersign/task-7"); got != c {
		t.Fatalf("branch at %s, commit %s", got, c)
	}
	want := "Countersign-Task: 7\nCountersign-Attempt: 1\nCountersign-Verified-By: go test ./...; review by rita"
	if got := gitT(t, repo, "log", "-1", "--format=%(trailers)", c); got != want {
		t.Fatalf("trailers:\n%s\nwant:\n%s", got, want)
	}
	if got := gitT(t, repo, "log", "-1", "--format=%an <%ae>|%cn|%s", c); got != "quinn (worker agent) <quinn@agents.countersign>|Countersign|Task 7: change f.txt with a second line that must not survive" {
		t.Fatalf("author, committer, subject: %s", got)
	}
	files := gitT(t, repo, "ls-tree", "-r", "--name-only", c)
	if files != ".gitignore\nf.txt\nnew/added.go" {
		t.Fatalf("committed files:\n%s", files)
	}
	if got := gitT(t, repo, "show", c+":f.txt"); got != "one\n2\nthree" {
		t.Fatalf("f.txt committed as %q", got)
	}
	if st := gitT(t, ws.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("worktree not clean after the commit:\n%s", st)
	}
	// A retry of the same verification (the runner died before recording the id).
	if again := commitVerified(t, m, ws); again != c {
		t.Fatalf("the same verification committed twice: %s then %s", c, again)
	}

	// The worker committed everything itself: the verification still gets its commit,
	// with the worker's commit as parent and the same files.
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\n2\n3\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "worker commits")
	workers := gitT(t, ws.Dir, "rev-parse", "HEAD")
	c2, err := m.CommitVerified(ctx, ws, candidateInfo(t, m, ws, verifiedInfo(7, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if c2 == workers || gitT(t, repo, "rev-parse", c2+"^") != workers || gitT(t, repo, "rev-parse", c2+"^{tree}") != gitT(t, repo, "rev-parse", workers+"^{tree}") {
		t.Fatalf("verified %s, worker's %s: want an empty commit on top", c2, workers)
	}
	if !strings.Contains(gitT(t, repo, "log", "-1", "--format=%(trailers)", c2), "Countersign-Attempt: 2") {
		t.Fatal("the empty verified commit lacks its trailers")
	}

	// Refusals before anything runs.
	tree := gitT(t, repo, "rev-parse", c2+"^{tree}")
	for name, ci := range map[string]CommitInfo{
		"no author":          {Subject: "x", Tree: tree},
		"author with <":      {Author: Identity{"a <b>", "a@b"}, Subject: "x", Tree: tree},
		"email with newline": {Author: Identity{"a", "a@b\nX-Evil: 1"}, Subject: "x", Tree: tree},
		"empty subject":      {Author: agent, Subject: " \n\t", Tree: tree},
		"trailer key":        {Author: agent, Subject: "x", Trailers: []Trailer{{"Bad Key", "v"}}, Tree: tree},
		"empty trailer":      {Author: agent, Subject: "x", Trailers: []Trailer{{"Countersign-Task", "\n"}}, Tree: tree},
		"no tree":            {Author: agent, Subject: "x"},
		"tree expression":    {Author: agent, Subject: "x", Tree: "HEAD^{tree}"},
	} {
		if _, err := m.CommitVerified(ctx, ws, ci); models.ErrorCode(err) != models.EINVALID {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A tree the repository does not hold (never exported), and an id that is not a tree.
	for _, id := range []string{strings.Repeat("ab", 20), gitT(t, repo, "rev-parse", c2+":f.txt")} {
		if _, err := m.CommitVerified(ctx, ws, CommitInfo{Author: agent, Subject: "x", Tree: id}); models.ErrorCode(err) != models.ENOTFOUND {
			t.Errorf("tree %s: %v", id, err)
		}
	}
	info := verifiedInfo(8, 1)
	info.Tree = tree
	if _, err := m.CommitVerified(ctx, prepare(t, m, Request{TaskID: 8, Attempt: 1}), info); models.ErrorCode(err) != models.EINVALID {
		t.Errorf("a workspace without a branch: %v", err)
	}
}

// The worker can write its worktree's index: entries whose file stats match the files
// on disk but whose object ids name other content. `git add -A && git commit` in the
// worktree trusts those stats and commits the other content; CommitVerified hashes the
// files themselves, so what lands is what the judge read.
func TestCommitVerifiedHashesFilesNotTheWorkersIndex(t *testing.T) {
	t.Parallel()
	m, repo := newManager(t), mainRepo(t)
	ws := branchTask(t, m, repo, 9, "main")
	verified := "one\nverified\nthree\n"
	evil := "one\nEVIL!!!!\nthree\n" // same size
	f := filepath.Join(ws.Dir, "f.txt")
	write(t, f, verified)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f, past, past); err != nil {
		t.Fatal(err)
	}
	gitT(t, ws.Dir, "add", "f.txt")
	evilID := hashObject(t, ws.Dir, evil)
	forgeIndexEntry(t, filepath.Join(repo, ".git", "worktrees", filepath.Base(ws.Dir), "index"), "f.txt", evilID)

	// The control: git in the worktree believes the forged index.
	if st := gitT(t, ws.Dir, "status", "--porcelain"); !strings.Contains(st, "M  f.txt") {
		t.Fatalf("the forged index did not take: status %q", st)
	}
	gitT(t, ws.Dir, "add", "-A")
	if tree := gitT(t, ws.Dir, "write-tree"); gitT(t, repo, "rev-parse", tree+":f.txt") != evilID {
		t.Fatal("control failed: git add -A in the worktree did not keep the forged entry, so this test could not fail")
	}

	c := commitVerified(t, m, ws)
	if got := gitT(t, repo, "show", c+":f.txt"); got+"\n" != verified {
		t.Fatalf("committed f.txt = %q, the judge read %q", got, verified)
	}
}

// hashObject writes content as a blob and returns its id.
func hashObject(t *testing.T, dir, content string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// forgeIndexEntry rewrites the object id of path's entry in a version 2 index and its
// checksum, keeping the entry's file stats: what a worker with write access to its
// worktree's administrative directory can do.
func forgeIndexEntry(t *testing.T, index, path, oid string) {
	t.Helper()
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "DIRC" || b[7] != 2 {
		t.Fatalf("not a version 2 index")
	}
	off := 12
	for {
		nameLen := int(b[off+60])<<8 | int(b[off+61])
		name := string(b[off+62 : off+62+nameLen&0xfff])
		if name == path {
			id, err := hex.DecodeString(oid)
			if err != nil || len(id) != 20 {
				t.Fatalf("oid %q", oid)
			}
			copy(b[off+40:off+60], id)
			break
		}
		entry := 62 + nameLen
		off += (entry + 8) &^ 7
		if off >= len(b)-20 {
			t.Fatalf("%s not in the index", path)
		}
	}
	sum := sha1.Sum(b[:len(b)-20])
	copy(b[len(b)-20:], sum[:])
	if err := os.WriteFile(index, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Workflow steps build on each other: step 2 starts from step 1's verified commit.
func TestStepBuildsOnPreviousStep(t *testing.T) {
	t.Parallel()
	m, repo := newManager(t), mainRepo(t)
	step1 := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(step1.Dir, "step1.txt"), "from step 1\n")
	c1 := commitVerified(t, m, step1)
	step2 := branchTask(t, m, repo, 2, c1)
	if b, err := os.ReadFile(filepath.Join(step2.Dir, "step1.txt")); err != nil || string(b) != "from step 1\n" {
		t.Fatalf("step 2 does not hold step 1's change: %q %v", b, err)
	}
	if step2.BaseCommit() != c1 {
		t.Fatalf("step 2 base %s, want %s", step2.BaseCommit(), c1)
	}
	write(t, filepath.Join(step2.Dir, "step2.txt"), "from step 2\n")
	c2 := commitVerified(t, m, step2)
	if gitT(t, repo, "rev-parse", c2+"^") != c1 {
		t.Fatal("step 2's commit does not follow step 1's")
	}
}

// Verified work lands on the target: fast-forwarded when checked out nowhere, with the
// checkout's files when it is the main working tree's branch, and with a merge commit
// when asked or when the target moved.
func TestMergeLandsVerifiedWork(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()

	// main is checked out in the person's checkout: its files move with it.
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\ntwo\nthree\nfour\n")
	c := commitVerified(t, m, ws)
	before := gitT(t, repo, "rev-parse", "main")
	res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FastForward || !res.CheckedOut || res.Commit != c || res.Previous != before || gitT(t, repo, "rev-parse", "main") != c {
		t.Fatalf("result %+v; main at %s", res, gitT(t, repo, "rev-parse", "main"))
	}
	if _, err := gitTry(repo, "merge-base", "--is-ancestor", c, "main"); err != nil {
		t.Fatal("the verified commit is not reachable from main")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("the checkout's files did not move: %q", b)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout is not clean: %s", st)
	}
	// Again: nothing to do.
	if res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); err != nil || !res.UpToDate {
		t.Fatalf("second merge: %+v %v", res, err)
	}

	// A target checked out nowhere moves by itself; the checkout is not touched.
	gitT(t, repo, "branch", "release", "main")
	ws2 := branchTask(t, m, repo, 2, "release")
	write(t, filepath.Join(ws2.Dir, "r.txt"), "release note\n")
	c2 := commitVerified(t, m, ws2)
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws2.Branch(), Verified: c2, FastForward: true})
	if err != nil || !res.FastForward || res.CheckedOut || gitT(t, repo, "rev-parse", "release") != c2 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "r.txt")); !os.IsNotExist(err) {
		t.Fatal("merging into release changed the checkout of main")
	}

	// No fast-forward asked: a merge commit whose second parent is the verified one.
	ws3 := branchTask(t, m, repo, 3, "release")
	write(t, filepath.Join(ws3.Dir, "s.txt"), "s\n")
	c3 := commitVerified(t, m, ws3)
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws3.Branch(), Verified: c3, FastForward: false})
	if err != nil || res.FastForward {
		t.Fatalf("no-ff: %+v %v", res, err)
	}
	if parents := gitT(t, repo, "log", "-1", "--format=%P|%s|%an", "release"); parents != c2+" "+c3+"|Merge branch 'countersign/task-3' into release|Countersign" {
		t.Fatalf("merge commit: %s", parents)
	}

	// The target moved since the branch left it: a merge commit even with FastForward.
	ws4 := branchTask(t, m, repo, 4, "release")
	write(t, filepath.Join(ws4.Dir, "t.txt"), "t\n")
	c4 := commitVerified(t, m, ws4)
	ws5 := branchTask(t, m, repo, 5, "release")
	write(t, filepath.Join(ws5.Dir, "u.txt"), "u\n")
	c5 := commitVerified(t, m, ws5)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws4.Branch(), Verified: c4, FastForward: true}); err != nil {
		t.Fatal(err)
	}
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws5.Branch(), Verified: c5, FastForward: true})
	if err != nil || res.FastForward {
		t.Fatalf("diverged: %+v %v", res, err)
	}
	for _, f := range []string{"r.txt", "s.txt", "t.txt", "u.txt"} {
		if _, err := gitTry(repo, "cat-file", "-e", "release:"+f); err != nil {
			t.Errorf("release lacks %s", f)
		}
	}
}

// A commit added to the branch after verification stops the merge; the target stays.
func TestMergeRefusesChangesAfterVerification(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nverified\nthree\n")
	c := commitVerified(t, m, ws)
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nsneaked in\nthree\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "after verification")
	before := gitT(t, repo, "rev-parse", "main")
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	var nv *NotVerifiedError
	if !errors.As(err, &nv) || !errors.Is(err, ErrNotVerified) || nv.Tip == c {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("the checkout changed: %q", b)
	}

	// History rewritten to the same files, without the verified commit: refused too.
	gitT(t, ws.Dir, "reset", "-q", "--hard", "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nverified\nthree\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "same files, other history")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("rewritten history: %v", err)
	}
	// An empty commit after verification keeps the files: it may land.
	gitT(t, ws.Dir, "reset", "-q", "--hard", c)
	gitT(t, ws.Dir, "commit", "-q", "--allow-empty", "-m", "a note")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); err != nil {
		t.Fatalf("same files after verification: %v", err)
	}
}

// Two tasks change the same line: the second merge is a conflict naming the file, with
// the conflicting lines, and the target stays where the first merge left it.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	gitT(t, repo, "branch", "release", "main")
	a, b := branchTask(t, m, repo, 1, "release"), branchTask(t, m, repo, 2, "release")
	write(t, filepath.Join(a.Dir, "f.txt"), "one\nA\nthree\n")
	write(t, filepath.Join(b.Dir, "f.txt"), "one\nB\nthree\n")
	ca, cb := commitVerified(t, m, a), commitVerified(t, m, b)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: a.Branch(), Verified: ca, FastForward: true}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: b.Branch(), Verified: cb, FastForward: true})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Files) != 1 || ce.Files[0].Path != "f.txt" {
		t.Fatalf("err = %v (%+v)", err, ce)
	}
	if h := ce.Files[0].Hunks; !strings.Contains(h, "<<<<<<< ") || !strings.Contains(h, "\nA\n") || !strings.Contains(h, "\nB\n") || strings.Contains(h, "three") {
		t.Fatalf("hunks:\n%s", h)
	}
	if got := gitT(t, repo, "rev-parse", "release"); got != ca {
		t.Fatalf("release moved to %s", got)
	}
	// The same conflict into the checked-out main leaves the checkout untouched.
	gitT(t, repo, "merge", "-q", "--ff-only", "release")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: b.Branch(), Verified: cb, FastForward: true}); !errors.As(err, &ce) {
		t.Fatalf("into main: %v", err)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout was left mid-merge: %s", st)
	}
}

// A checked-out target with uncommitted changes is not touched.
func TestMergeIntoDirtyCheckoutRefused(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "g.txt"), "g\n")
	c := commitVerified(t, m, ws)
	write(t, filepath.Join(repo, "f.txt"), "a person's unsaved work\n")
	before := gitT(t, repo, "rev-parse", "main")
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if models.ErrorCode(err) != models.ECONFLICT || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "a person's unsaved work\n" {
		t.Fatal("the person's change was lost")
	}
	// Checked out in another worktree: refused as well.
	other := filepath.Join(t.TempDir(), "other")
	gitT(t, repo, "worktree", "add", "-q", "-b", "side", other, "main")
	ws2 := branchTask(t, m, repo, 2, "side")
	write(t, filepath.Join(ws2.Dir, "h.txt"), "h\n")
	c2 := commitVerified(t, m, ws2)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "side", Branch: ws2.Branch(), Verified: c2, FastForward: true}); models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("target in another worktree: %v", err)
	}
}

// The object store is the worker's to write: content planted under the id of a file
// the worker wrote would be what lands. Merge hashes what it brings in and refuses.
func TestMergeRefusesPlantedObject(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	good := "verified content\n"
	id := fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(good), good))))
	// The worker plants a loose object under that id before it writes the file.
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	evil := "evil content!!!!\n"
	fmt.Fprintf(zw, "blob %d\x00%s", len(evil), evil)
	zw.Close()
	write(t, filepath.Join(repo, ".git", "objects", id[:2], id[2:]), z.String())
	write(t, filepath.Join(ws.Dir, "g.txt"), good)
	// Merge's check is the backstop for a commit made in the repository by any other
	// means: here the tree `git add -A` writes there (WorktreeTree), which keeps the
	// planted object because its id is already present.
	tree, err := m.WorktreeTree(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	info := verifiedInfo(1, 1)
	info.Tree = tree
	c, err := m.CommitVerified(ctx, ws, info)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "show", c+":g.txt"); got+"\n" != evil {
		t.Fatalf("control: git reads %q for the planted id, so this test could not fail", got)
	}
	before := gitT(t, repo, "rev-parse", "main")
	_, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), id[:12]) {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if _, err := os.Stat(filepath.Join(repo, "g.txt")); !os.IsNotExist(err) {
		t.Fatal("the planted content reached the checkout")
	}

	// Landed through the judge's snapshot, the planted object changes nothing: the
	// exported pack holds the verified content, and git reads packs before loose
	// objects.
	ws2 := branchTask(t, m, repo, 2, "main")
	write(t, filepath.Join(ws2.Dir, "g.txt"), good)
	c2 := commitVerified(t, m, ws2)
	if got := gitT(t, repo, "show", c2+":g.txt"); got+"\n" != good {
		t.Fatalf("the snapshot's landing reads %q", got)
	}
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws2.Branch(), Verified: c2, FastForward: true}); err != nil {
		t.Fatalf("the snapshot's landing was refused: %v", err)
	}
}

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
		calls := map[string]func() error{
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
