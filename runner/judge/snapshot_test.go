package judge

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snapCandidate snapshots what a worker left in repo as the runner does: under the
// base's rules, the base as parent, the output forced in, the meta dir left out.
//
// Every candidate is taken twice, through the stat cache and with every file hashed,
// and the two must agree (except while the test switches ctime off to show what it
// defends).
func snapCandidate(t *testing.T, s *Store, repo string, base Snapshot, force ...string) Snapshot {
	t.Helper()
	req := SnapshotRequest{Dir: repo, IgnoreFrom: base.Commit, Parent: base.Commit,
		Force: force, Exclude: []string{".countersign"}, Message: "candidate", Ref: "refs/countersign/tasks/1/attempt-1"}
	c, err := s.Snapshot(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !ignoreCtime {
		noStatCache = true
		full, err := s.Snapshot(context.Background(), req)
		noStatCache = false
		if err != nil {
			t.Fatal(err)
		}
		if full.Tree != c.Tree {
			t.Fatalf("the snapshot through the stat cache (%s) differs from hashing every file (%s)", c.Tree, full.Tree)
		}
	}
	return c
}

// snapSwitchOff sets a test-only knob for the rest of the test.
func snapSwitchOff(t *testing.T, knob *bool) {
	*knob = true
	t.Cleanup(func() { *knob = false })
}

// TestCandidateIgnoresWorkerGitignore: a hostile worker hides the helper its tests
// import behind its own .gitignore (so the verified commit would lack it) and
// un-ignores node_modules (so its own dependency tree would land). The candidate is
// taken under the base's rules: the helper is in it, node_modules is not, and the
// worker's .gitignore is an ordinary file of the result.
func TestCandidateIgnoresWorkerGitignore(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{".gitignore": "node_modules/\n/build/\n*.log\n", "app.py": "import helper\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{
		".gitignore":          "helper.py\n!node_modules/\n!/build/\n",
		"sub/.gitignore":      "*\n",
		"sub/code.py":         "x = 1\n",
		"helper.py":           "def f(): return 1\n",
		"node_modules/x/i.js": "module.exports = 'worker'\n",
		"build/out.bin":       "worker build\n",
		"run.log":             "log\n",
	})
	check := func(files map[string]string) []string {
		var wrong []string
		for _, p := range []string{"helper.py", "sub/code.py", "sub/.gitignore", ".gitignore"} {
			if _, ok := files[p]; !ok {
				wrong = append(wrong, "missing "+p)
			}
		}
		for _, p := range []string{"node_modules/x/i.js", "build/out.bin", "run.log"} {
			if _, ok := files[p]; ok {
				wrong = append(wrong, "has "+p)
			}
		}
		return wrong
	}
	cand := snapCandidate(t, s, repo, base)
	if wrong := check(snapFiles(t, s, cand.Commit)); len(wrong) > 0 {
		t.Fatalf("candidate under the base's rules: %v", wrong)
	}

	// Defence off: the worker's .gitignore decides, and the candidate is the one the
	// worker wanted — the helper hidden, its node_modules and build in.
	snapSwitchOff(t, &honourWorkerIgnore)
	off := snapCandidate(t, s, repo, base)
	if wrong := check(snapFiles(t, s, off.Commit)); !slices.Contains(wrong, "missing helper.py") || !slices.Contains(wrong, "has node_modules/x/i.js") {
		t.Fatalf("with the worker's .gitignore honoured, expected the helper hidden and node_modules/build in; got %v", wrong)
	}
}

// TestForceIncludesIgnoredOutput: the contract's output file is in the candidate even
// under an ignored directory; a forced path that climbs out or through a link is not.
func TestForceIncludesIgnoredOutput(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{".gitignore": "out/\n", "a": "a\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{"out/result.json": "{}\n", "out/other": "x\n"})
	if err := os.Symlink("/etc", filepath.Join(repo, "etc")); err != nil {
		t.Fatal(err)
	}
	cand := snapCandidate(t, s, repo, base, "out/result.json", "etc/passwd", "missing.json", "out")
	files := snapFiles(t, s, cand.Commit)
	if files["out/result.json"] != "{}\n" {
		t.Fatalf("forced output missing: %v", snapKeys(files))
	}
	if _, ok := files["out/other"]; ok {
		t.Fatal("an ignored file that was not forced is in the candidate")
	}
	if _, ok := files["etc/passwd"]; ok {
		t.Fatal("a forced path through a link was read out of the workspace")
	}
	if files["etc"] != "/etc" {
		t.Fatalf("the link itself should be recorded as a link: %v", files)
	}
	if _, err := s.Snapshot(context.Background(), SnapshotRequest{Dir: repo, Force: []string{"../x"}}); err == nil {
		t.Fatal("a forced path outside the workspace was accepted")
	}
}

// TestSnapshotRunsNoFilter: the repository's config (which a worker may write)
// defines a clean filter and the worker's .gitattributes names it. Plain `git add` in
// the repository runs it (the marker appears, the stored content is the filter's);
// the judge's snapshot runs nothing and stores the file as it is.
func TestSnapshotRunsNoFilter(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{"a.txt": "honest\n"})
	base := snapBase(t, s, repo, c)
	marker := filepath.Join(t.TempDir(), "ran")
	sgit(t, repo, "config", "filter.evil.clean", "touch "+marker+"; echo forged")
	snapPut(t, repo, map[string]string{".gitattributes": "* filter=evil\n", "a.txt": "mine\n"})

	cand := snapCandidate(t, s, repo, base)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the snapshot ran the repository's clean filter")
	}
	if got := snapFiles(t, s, cand.Commit)["a.txt"]; got != "mine\n" {
		t.Fatalf("a.txt = %q, want the file as it is", got)
	}

	// Without the store (git in the repository, as `git add -A` did), the filter runs.
	copyDir := t.TempDir()
	sgit(t, copyDir, "clone", "-q", repo, ".")
	sgit(t, copyDir, "config", "filter.evil.clean", "touch "+marker+"; echo forged")
	snapPut(t, copyDir, map[string]string{".gitattributes": "* filter=evil\n", "a.txt": "mine\n"})
	sgit(t, copyDir, "add", "-A")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("plain git add did not run the filter: the test proves nothing")
	}
	if got := sgit(t, copyDir, "cat-file", "blob", ":a.txt"); got != "forged" {
		t.Fatalf("plain git add stored %q", got)
	}
}

// TestImportRefusesCorruptObject: the worker rewrites a loose object of its
// repository so that the base's file reads differently. The repository's own git
// serves the forged content; Import refuses the commit.
func TestImportRefusesCorruptObject(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{"test_a.py": "assert f() == 2\n"})
	blob := sgit(t, repo, "rev-parse", "HEAD:test_a.py")
	forged := []byte("assert True\n")
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	fmt.Fprintf(w, "blob %d\x00%s", len(forged), forged)
	w.Close()
	obj := filepath.Join(repo, ".git", "objects", blob[:2], blob[2:])
	os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	if got := sgit(t, repo, "cat-file", "blob", blob); got != "assert True" {
		t.Fatalf("the repository's git should serve the forged content, got %q", got)
	}
	err := s.Import(context.Background(), repo, c)
	if err == nil {
		t.Fatalf("a corrupted object was imported; the store reads %q", snapFiles(t, s, c)["test_a.py"])
	}
	t.Logf("refused: %v", err)
}

// TestSnapshotIsDeterministic: the same tree and parent give the same commit.
func TestSnapshotIsDeterministic(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{"a": "a\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{"b": "b\n"})
	one := snapCandidate(t, s, repo, base)
	two := snapCandidate(t, s, repo, base)
	if one.Commit != two.Commit || one.Tree != two.Tree {
		t.Fatalf("two snapshots of the same tree differ: %+v %+v", one, two)
	}
	if got := sgit(t, filepath.Dir(s.GitDir()), "--git-dir="+s.GitDir(), "rev-parse", "refs/countersign/tasks/1/attempt-1"); got != one.Commit {
		t.Fatalf("ref = %s, want %s", got, one.Commit)
	}
}

// TestSnapshotEdges: nested repositories, .git entries, the meta dir, links, deleted
// and replaced tracked paths, a tracked file the rules ignore, and a workspace that is
// not a git repository.
func TestSnapshotEdges(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	repo, _ := snapRepo(t, map[string]string{".gitignore": "*.o\n", "keep.o": "tracked\n", "d/x": "x\n", "f": "f\n", "gone": "g\n"})
	sgit(t, repo, "add", "-f", "keep.o") // tracked although the rules ignore it
	sgit(t, repo, "commit", "-q", "-m", "keep.o")
	c := sgit(t, repo, "rev-parse", "HEAD")
	base := snapBase(t, s, repo, c)
	nested := filepath.Join(repo, "nested")
	os.Remove(filepath.Join(repo, "f")) // a tracked file replaced by a directory
	snapPut(t, repo, map[string]string{"nested/n": "n\n", "sub/.git": "gitdir: /elsewhere\n", "sub/s": "s\n",
		".countersign/brief.md": "brief\n", "keep.o": "changed\n", "f/inside": "dir now\n", "new.o": "ignored\n"})
	sgit(t, nested, "init", "-q")
	sgit(t, nested, "add", "n")
	sgit(t, nested, "commit", "-q", "-m", "n")
	os.Remove(filepath.Join(repo, "gone"))
	os.RemoveAll(filepath.Join(repo, "d"))
	// A tracked file replaced by a fifo, and a new fifo: neither is a file of the
	// result, and neither makes the snapshot fail.
	os.Remove(filepath.Join(repo, "gone"))
	for _, p := range []string{"gone", "pipe"} {
		if err := syscall.Mkfifo(filepath.Join(repo, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(repo, "d")); err != nil {
		t.Fatal(err)
	}
	cand := snapCandidate(t, s, repo, base)
	files := snapFiles(t, s, cand.Commit)
	want := []string{".gitignore", "d", "f/inside", "keep.o", "sub/s"}
	if got := snapKeys(files); !slices.Equal(got, want) {
		t.Fatalf("candidate = %v, want %v", got, want)
	}
	if files["keep.o"] != "changed\n" || files["d"] != "/etc" {
		t.Fatalf("contents wrong: %v", files)
	}
	if !slices.Equal(cand.Skipped, []string{"nested"}) {
		t.Fatalf("skipped = %v, want the nested repository", cand.Skipped)
	}

	// Not a git workspace: the same, with no parent.
	plain := t.TempDir()
	snapPut(t, plain, map[string]string{".gitignore": "tmp/\n", "a": "a\n", "tmp/t": "t\n"})
	first, err := s.Snapshot(ctx, SnapshotRequest{Dir: plain})
	if err != nil {
		t.Fatal(err)
	}
	snapPut(t, plain, map[string]string{".gitignore": "", "b": "b\n", "tmp/u": "u\n"})
	second, err := s.Snapshot(ctx, SnapshotRequest{Dir: plain, IgnoreFrom: first.Commit, Parent: first.Commit})
	if err != nil {
		t.Fatal(err)
	}
	if got := snapKeys(snapFiles(t, s, second.Commit)); strings.Join(got, ",") != ".gitignore,a,b" {
		t.Fatalf("non-git candidate = %v", got)
	}
}

// TestSelfIgnoringGitignoreStillRules: a virtualenv's .venv/.gitignore is `*` — it
// ignores itself, so it is in no snapshot, yet at the base it kept .venv out. A
// worker that installs into .venv must not get it into its candidate.
func TestSelfIgnoringGitignoreStillRules(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{"a.py": "a\n"})
	snapPut(t, repo, map[string]string{".venv/.gitignore": "*\n", ".venv/lib/site.py": "base\n"})
	base := snapBase(t, s, repo, c)
	if _, ok := snapFiles(t, s, base.Commit)[".venv/.gitignore"]; ok {
		t.Fatal("the base snapshot holds an ignored .gitignore")
	}
	snapPut(t, repo, map[string]string{".venv/lib/worker.py": "worker\n", "b.py": "b\n"})
	cand := snapCandidate(t, s, repo, base)
	if got := snapKeys(snapFiles(t, s, cand.Commit)); strings.Join(got, ",") != "a.py,b.py" {
		t.Fatalf("candidate = %v, want the .venv left out", got)
	}
}

// TestSnapshotSeesForgedMtime: the candidate starts from the base snapshot's index
// and its stat data (the stat cache; the base is more than a second old, so its
// records are trusted). The hostile worker rewrites a file with content of the same
// size in place and sets its modification time back, so size, inode and mtime all
// match what the base recorded. With the change time left out of the comparison
// (defence off) the base's content would be judged; with it, the rewrite is caught.
func TestSnapshotSeesForgedMtime(t *testing.T) {
	s := snapStore(t)
	repo, c := snapRepo(t, map[string]string{"calc.py": "def f(): return 1\n"})
	file := filepath.Join(repo, "calc.py")
	past := time.Now().Add(-time.Hour).Truncate(time.Second).Add(123456789)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	// The file's last change (the Chtimes) must be more than a second older than
	// the base snapshot's index, or the cache distrusts its record anyway.
	time.Sleep(1100 * time.Millisecond)
	base := snapBase(t, s, repo, c)
	if _, err := os.Stat(s.cachePath(repo)); err != nil {
		t.Fatal("the base snapshot left no index in the stat cache")
	}
	forge := func(content string) {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		if err := os.Chtimes(file, past, past); err != nil {
			t.Fatal(err)
		}
	}

	// Defence off first (its snapshot keeps the base's record of calc.py, so the
	// cache the second snapshot starts from is the same).
	ignoreCtime = true
	forge("def f(): return 2\n")
	off := snapCandidate(t, s, repo, base)
	ignoreCtime = false
	if got := snapFiles(t, s, off.Commit)["calc.py"]; got != "def f(): return 1\n" {
		t.Fatalf("with ctime not compared the forgery should pass unseen, got %q", got)
	}

	forge("def f(): return 3\n")
	cand := snapCandidate(t, s, repo, base)
	if got := snapFiles(t, s, cand.Commit)["calc.py"]; got != "def f(): return 3\n" {
		t.Fatalf("candidate holds %q: the rewrite was missed", got)
	}
	// And an untouched workspace snapshots to the same tree through the cache.
	again := snapCandidate(t, s, repo, base)
	if again.Tree != cand.Tree {
		t.Fatalf("snapshot through the cache differs: %s vs %s", again.Tree, cand.Tree)
	}
}

// TestSnapshotKeepsBytesExactly: the worker's .gitattributes asks git to normalise
// line endings, collapse $Id$ and re-encode from UTF-16 on the way in, so the stored
// file would differ from the one on disk. The store's own attributes outrank them:
// the snapshot holds the bytes as they are. Switched off, they are transformed.
func TestSnapshotKeepsBytesExactly(t *testing.T) {
	files := map[string]string{
		".gitattributes": "* text eol=lf ident\nenc.txt working-tree-encoding=UTF-16LE\n",
		"crlf.txt":       "line one\r\nline two\r\n",
		"id.txt":         "$Id: forged-by-worker $\n",
		"enc.txt":        "h\x00i\x00\n\x00",
	}
	snap := func() map[string]string {
		s := snapStore(t)
		dir := t.TempDir()
		snapPut(t, dir, files)
		got, err := s.Snapshot(context.Background(), SnapshotRequest{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return snapFiles(t, s, got.Commit)
	}
	for p, want := range snap() {
		if files[p] != want {
			t.Errorf("%s stored as %q, on disk %q", p, want, files[p])
		}
	}
	keepWorkerAttributes = true
	defer func() { keepWorkerAttributes = false }()
	off := snap()
	if off["crlf.txt"] == files["crlf.txt"] || off["id.txt"] == files["id.txt"] {
		t.Fatalf("with the worker's attributes honoured the files should be transformed: %q", off)
	}
}
