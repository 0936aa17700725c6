package judge

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// These tests run real git. The judge's own git is isolated by Store.env; the plain
// git the tests run to build repositories (and to show what git would do without the
// judge's defences) gets an environment of the same kind, so nothing on the machine
// changes the outcome.

func snapEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0", // no detached gc racing the cleanup
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}
}

// gitT runs plain git in dir and returns its trimmed output.
func sgit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := sgitErr(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func sgitErr(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(snapEnv(dir), env...)
	return cmd.CombinedOutput()
}

func snapNeedGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required")
		}
		t.Skip("git not installed")
	}
}

func snapStore(t testing.TB) *Store {
	t.Helper()
	snapNeedGit(t)
	s, err := OpenStore(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeFiles writes rel → content under dir, making directories.
func snapPut(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo makes a repository with files committed on main and returns its directory
// and the commit.
func snapRepo(t testing.TB, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	sgit(t, dir, "init", "-q", "-b", "main")
	snapPut(t, dir, files)
	sgit(t, dir, "add", "-A")
	sgit(t, dir, "commit", "-q", "-m", "base")
	return dir, sgit(t, dir, "rev-parse", "HEAD")
}

// treeFiles reads the tree of commit in the store as path → content (a link's
// content is its target).
func snapFiles(t testing.TB, s *Store, commit string) map[string]string {
	t.Helper()
	ctx := context.Background()
	cs, err := s.Changes(ctx, "", commit)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, c := range cs {
		b, err := s.Blob(ctx, c.NewBlob)
		if err != nil {
			t.Fatal(err)
		}
		files[c.Path] = string(b)
	}
	return files
}

func snapKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// baseOf imports repo's commit and takes the base snapshot the runner takes before
// any worker runs.
func snapBase(t testing.TB, s *Store, repo, commit string) Snapshot {
	t.Helper()
	ctx := context.Background()
	if err := s.Import(ctx, repo, commit); err != nil {
		t.Fatal(err)
	}
	base, err := s.Snapshot(ctx, SnapshotRequest{Dir: repo, Parent: commit, Exclude: []string{".countersign"}, Ref: "refs/countersign/tasks/1/base"})
	if err != nil {
		t.Fatal(err)
	}
	return base
}

func TestOpenStoreWritesItsOwnConfig(t *testing.T) {
	s := snapStore(t)
	cfg, err := os.ReadFile(filepath.Join(s.GitDir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"auto = 0", "hooksPath = /dev/null", "fsmonitor = false", "untrackedCache = false", "splitIndex = false", "fsckObjects = true"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("store config lacks %q:\n%s", want, cfg)
		}
	}
	if bytes.Contains(cfg, []byte("filter")) {
		t.Errorf("store config defines a filter:\n%s", cfg)
	}
	// Opening again keeps the store and its objects.
	if _, err := OpenStore(context.Background(), filepath.Dir(filepath.Dir(s.GitDir()))); err != nil {
		t.Fatal(err)
	}
}

func TestChangesAndBlob(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	repo, c := snapRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "gone.txt": "x\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{"a.txt": "A\n", "new.txt": "n\n"})
	os.Remove(filepath.Join(repo, "gone.txt"))
	if err := os.Symlink("../a.txt", filepath.Join(repo, "d", "link")); err != nil {
		t.Fatal(err)
	}
	cand, err := s.Snapshot(ctx, SnapshotRequest{Dir: repo, IgnoreFrom: base.Commit, Parent: base.Commit})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Changes(ctx, base.Commit, cand.Commit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Path)
	}
	if strings.Join(got, ",") != "a.txt,d/link,gone.txt,new.txt" {
		t.Fatalf("changes = %v", got)
	}
	if cs[1].NewMode != 0o120000 || cs[2].NewMode != 0 || cs[2].NewBlob != "" || cs[3].OldMode != 0 || cs[3].OldBlob != "" || cs[0].OldMode != 0o100644 {
		t.Fatalf("modes or ids wrong: %+v", cs)
	}
	if b, err := s.Blob(ctx, cs[1].NewBlob); err != nil || string(b) != "../a.txt" {
		t.Fatalf("link blob = %q, %v", b, err)
	}
	if b, err := s.Blob(ctx, cs[0].NewBlob); err != nil || string(b) != "A\n" {
		t.Fatalf("blob = %q, %v", b, err)
	}
	if _, err := s.Blob(ctx, strings.Repeat("0", 40)); err == nil {
		t.Fatal("a missing blob was read")
	}
	if _, err := s.Blob(ctx, cand.Tree); err == nil {
		t.Fatal("a tree was read as a blob")
	}
	// The reader is still in step after the refusals.
	if b, err := s.Blob(ctx, cs[3].NewBlob); err != nil || string(b) != "n\n" {
		t.Fatalf("blob after refusals = %q, %v", b, err)
	}
	if _, err := s.Blob(ctx, "HEAD"); err == nil {
		t.Fatal("a revision expression was accepted as an id")
	}
}

// TestSnapshotRefusesBadRequests: ids, refs and paths reach git only when they are
// what they claim; a cancelled context stops the work.
func TestSnapshotRefusesBadRequests(t *testing.T) {
	s := snapStore(t)
	dir := t.TempDir()
	snapPut(t, dir, map[string]string{"a": "a\n"})
	ctx := context.Background()
	for name, r := range map[string]SnapshotRequest{
		"no dir":          {},
		"file as dir":     {Dir: filepath.Join(dir, "a")},
		"parent option":   {Dir: dir, Parent: "--output=/tmp/x"},
		"ignore revision": {Dir: dir, IgnoreFrom: "HEAD~1"},
		"ref outside":     {Dir: dir, Ref: "refs/heads/main"},
		"ref climbing":    {Dir: dir, Ref: "refs/countersign/../heads/main"},
		"exclude outside": {Dir: dir, Exclude: []string{"../x"}},
		"force absolute":  {Dir: dir, Force: []string{"/etc/passwd"}},
	} {
		if _, err := s.Snapshot(ctx, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, bad := range []string{"", "main", "--upload-pack=touch /tmp/x"} {
		if err := s.Import(ctx, dir, bad); err == nil {
			t.Errorf("Import of %q accepted", bad)
		}
		if err := s.Export(ctx, dir, bad); err == nil {
			t.Errorf("Export of %q accepted", bad)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Snapshot(cancelled, SnapshotRequest{Dir: dir}); err == nil {
		t.Error("a snapshot ran with a cancelled context")
	}
}
