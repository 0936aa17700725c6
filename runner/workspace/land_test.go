package workspace

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
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
