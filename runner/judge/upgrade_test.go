package judge

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// oldJournal lays out, under metaRoot, the journal a runner of the previous version
// left for task when it died mid-check in the workspace root, byte for byte in that
// version's format (kind 0 absent, 1 regular, 2 symbolic link): saved holds the
// worker's content of each entry.
func oldJournal(t *testing.T, metaRoot, task, root, entries string, saved ...string) string {
	t.Helper()
	j := filepath.Join(metaRoot, task, "judge", "journal")
	if err := os.MkdirAll(filepath.Join(j, "saved"), 0o750); err != nil {
		t.Fatal(err)
	}
	for i, s := range saved {
		if err := os.WriteFile(filepath.Join(j, "saved", strconv.Itoa(i)), []byte(s), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"root":` + quote(root) + `,"entries":` + entries + `}`
	if err := os.WriteFile(filepath.Join(j, "journal.json"), []byte(body), 0o640); err != nil {
		t.Fatal(err)
	}
	return j
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// a view of the previous version: the worker's calc_test.go replaced by the base's,
// and a held-out test added in a directory the view made.
const oldEntries = `[{"rel":"calc_test.go","kind":1,"mode":420},{"rel":"hidden/held_test.go","kind":0,"made":["hidden"]}]`

// TestRecoverAllPutsBackPreviousVersionsViews: the upgrade path. A workspace a runner
// of the previous version left as the judge's view (it died mid-check) gets the
// worker's test back and loses the held-out test, which the task's next worker must
// not read; a journal still locked by a live runner is left alone; a journal the
// runner made but never wrote is removed.
func TestRecoverAllPutsBackPreviousVersionsViews(t *testing.T) {
	metaRoot := t.TempDir()
	view := func() string {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"calc_test.go": "base\n", "hidden/held_test.go": "secret\n"})
		return root
	}
	deadRoot, liveRoot := view(), view()
	dead := oldJournal(t, metaRoot, "1", deadRoot, oldEntries, "worker\n", "")
	live := oldJournal(t, metaRoot, "2", liveRoot, oldEntries, "worker\n", "")
	lock, err := lockDir(live) // the live runner's lock (a lock of another open file)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	unwritten := filepath.Join(metaRoot, "3", "judge", "journal")
	if err := os.MkdirAll(filepath.Join(unwritten, "saved"), 0o750); err != nil {
		t.Fatal(err)
	}

	closed, err := RecoverAll(metaRoot)
	sort.Strings(closed)
	if err != nil || len(closed) != 2 || closed[0] != dead || closed[1] != unwritten {
		t.Fatalf("RecoverAll = %v, %v; want %s and %s", closed, err, dead, unwritten)
	}
	if got := readFile(t, filepath.Join(deadRoot, "calc_test.go")); got != "worker\n" {
		t.Errorf("the dead view's worker file: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(deadRoot, "hidden")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the held-out test (or the directory made for it) is still in the workspace: %v", err)
	}
	for _, j := range []string{dead, unwritten} {
		if _, err := os.Lstat(j); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the journal %s is still there: %v", j, err)
		}
	}
	if got := readFile(t, filepath.Join(liveRoot, "hidden/held_test.go")); got != "secret\n" {
		t.Errorf("the live view was put back under its runner: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(live, "journal.json")); err != nil {
		t.Errorf("the live view's journal: %v", err)
	}
}

// TestRecoverAllFollowsNoLink: while the dead runner's view was up, a process of the
// attempt that outlived it replaced the directory holding the protected and held-out
// files with a link to a directory outside the workspace. Putting back writes nothing
// through the link (openat2 beneath the workspace, no links): the files outside keep
// their content, and the journal stays, with an error, for the operator.
func TestRecoverAllFollowsNoLink(t *testing.T) {
	metaRoot, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, outside, map[string]string{"calc_test.go": "outside\n", "held_test.go": "outside\n"})
	if err := os.Symlink(outside, filepath.Join(root, "pkg")); err != nil {
		t.Fatal(err)
	}
	j := oldJournal(t, metaRoot, "1", root,
		`[{"rel":"pkg/calc_test.go","kind":1,"mode":420},{"rel":"pkg/held_test.go","kind":0}]`, "worker\n", "")
	closed, err := RecoverAll(metaRoot)
	var blocked *BlockedError
	if !errors.As(err, &blocked) || len(closed) != 0 {
		t.Fatalf("RecoverAll = %v, %v; want a *BlockedError", closed, err)
	}
	for _, name := range []string{"calc_test.go", "held_test.go"} {
		if got := readFile(t, filepath.Join(outside, name)); got != "outside\n" {
			t.Errorf("putting back wrote %s through the link: %q", name, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(j, "journal.json")); err != nil {
		t.Errorf("the journal went with its files not put back: %v", err)
	}
}
