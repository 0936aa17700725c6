package judge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge/fileparts"
)

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

var goRules = ParseRules([]string{"*_test.go", "testdata/**"})

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, rel string
		want      bool
	}{
		{"*_test.go", "calc_test.go", true},
		{"*_test.go", "pkg/deep/calc_test.go", true},
		{"*_test.go", "calc.go", false},
		{"testdata/**", "testdata/a/b.txt", true},
		{"testdata/**", "testdata", false},
		{"testdata/**", "pkg/testdata/x", false},
		{"**/*.test.*", "src/a.test.js", true},
		{"**/*.test.*", "a.test.js", true},
		{"tests/**", "tests/test_x.py", true},
		{".mocharc*", ".mocharc.yml", true},
	} {
		if got := (Rule{Glob: tc.glob}).Match(tc.rel); got != tc.want {
			t.Errorf("%s matches %s: %v, want %v", tc.glob, tc.rel, got, tc.want)
		}
	}
}

// TestViewRestoresAndPutsBack: the four cheats of a Go worker (skip, delete, a new
// TestMain, a changed expectation) are each reported and undone in the view, and the
// worker's versions are back after Close.
func TestViewRestoresAndPutsBack(t *testing.T) {
	root, meta := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{
		"calc.go":                "package calc\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go":           "package calc\n// TestAdd\nwant 5\n",
		"other_test.go":          "package calc\n",
		"testdata/in.txt":        "2 3\n",
		"node_modules/x_test.go": "not walked\n",
	})
	base, err := TakeBase(filepath.Join(meta, "base"), root, "snapshot", goRules)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := base.Files["node_modules/x_test.go"]; ok || len(base.Files) != 3 {
		t.Fatalf("base files %v", base.Files)
	}
	// The worker's cheats.
	writeFiles(t, root, map[string]string{
		"calc.go":         "package calc\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go":    "package calc\n// TestAdd\nt.Skip()\nwant 5\n",
		"zz_main_test.go": "func TestMain(m *testing.M) { os.Exit(0) }\n",
	})
	os.Remove(filepath.Join(root, "other_test.go"))
	os.RemoveAll(filepath.Join(root, "testdata"))

	base, err = LoadBase(filepath.Join(meta, "base"))
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(meta, "journal")
	v, changes, err := Open(root, base, goRules, Options{Restore: true, Journal: journal,
		HeldOut: []models.HeldOutTest{{Path: "held/big_test.go", Content: "held out"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.Change
	}
	want := map[string]string{"calc_test.go": "changed", "zz_main_test.go": "added", "other_test.go": "deleted", "testdata/in.txt": "deleted"}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for p, c := range want {
		if got[p] != c {
			t.Fatalf("changes %v, want %v", got, want)
		}
	}
	if d := changes[0].Diff; !strings.Contains(d, "+t.Skip()") {
		t.Fatalf("diff of calc_test.go: %q", d)
	}
	// The view: the base's tests, the worker's code, the held-out test.
	for rel, want := range map[string]string{
		"calc_test.go": "package calc\n// TestAdd\nwant 5\n", "other_test.go": "package calc\n", "testdata/in.txt": "2 3\n",
		"calc.go": "package calc\nfunc Add(a, b int) int { return a + b }\n", "held/big_test.go": "held out",
	} {
		if got := readFile(t, filepath.Join(root, rel)); got != want {
			t.Fatalf("view %s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "zz_main_test.go")); !os.IsNotExist(err) {
		t.Fatalf("the worker's TestMain is in the view: %v", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"calc_test.go": "package calc\n// TestAdd\nt.Skip()\nwant 5\n", "zz_main_test.go": "func TestMain(m *testing.M) { os.Exit(0) }\n",
	} {
		if got := readFile(t, filepath.Join(root, rel)); got != want {
			t.Fatalf("after Close %s = %q, want the worker's %q", rel, got, want)
		}
	}
	for _, gone := range []string{"other_test.go", "testdata", "held"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Fatalf("after Close %s exists: %v", gone, err)
		}
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
}

// TestViewRecoversAfterACrash: a view left open (the runner died) is put back by the
// next Open, and a restore never writes through a link the worker planted.
func TestViewRecoversAndFollowsNoLink(t *testing.T) {
	root, meta, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{"calc_test.go": "base\n", "testdata/in.txt": "in\n"})
	base, err := TakeBase(filepath.Join(meta, "base"), root, "snapshot", goRules)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "victim")
	writeFiles(t, outside, map[string]string{"victim": "untouched\n"})
	os.Remove(filepath.Join(root, "calc_test.go"))
	if err := os.Symlink(target, filepath.Join(root, "calc_test.go")); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(meta, "journal")
	v, changes, err := Open(root, base, goRules, Options{Restore: true, Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || !strings.Contains(changes[0].Diff, "symbolic link") {
		t.Fatalf("changes %+v", changes)
	}
	if got := readFile(t, target); got != "untouched\n" {
		t.Fatalf("the restore wrote through the worker's link: %q", got)
	}
	if got := readFile(t, filepath.Join(root, "calc_test.go")); got != "base\n" {
		t.Fatalf("view calc_test.go = %q", got)
	}
	// The runner dies here: v is never closed, its lock goes with its process. The
	// next Open puts the worker's link back first.
	v.lock.Close()
	if err := Recover(journal, root); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(root, "calc_test.go")); err != nil || l != target {
		t.Fatalf("after Recover calc_test.go links to %q (%v), want the worker's link", l, err)
	}

	// A directory on the way replaced with a link: blocked, nothing written outside.
	os.RemoveAll(filepath.Join(root, "testdata"))
	if err := os.Symlink(outside, filepath.Join(root, "testdata")); err != nil {
		t.Fatal(err)
	}
	_, _, err = Open(root, base, goRules, Options{Restore: true, Journal: journal})
	var be *BlockedError
	if !errors.As(err, &be) || be.Path != "testdata" {
		t.Fatalf("restoring below a linked dir: %v, want BlockedError", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "in.txt")); !os.IsNotExist(err) {
		t.Fatalf("a protected file was written through the worker's link: %v", err)
	}
	if l, _ := os.Readlink(filepath.Join(root, "calc_test.go")); l != target {
		t.Fatalf("a failed Open did not put back what it had changed: calc_test.go links to %q", l)
	}
}

// TestViewReportsWithoutRestoring: tests_may_change reports the change and leaves it.
func TestViewReportsWithoutRestoring(t *testing.T) {
	root, meta := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{"calc_test.go": "base\n"})
	base, _ := TakeBase(filepath.Join(meta, "base"), root, "snapshot", goRules)
	writeFiles(t, root, map[string]string{"calc_test.go": "worker\n"})
	v, changes, err := Open(root, base, goRules, Options{Journal: filepath.Join(meta, "j")})
	if err != nil || len(changes) != 1 {
		t.Fatalf("%v %v", changes, err)
	}
	if got := readFile(t, filepath.Join(root, "calc_test.go")); got != "worker\n" {
		t.Fatalf("restored without Restore: %q", got)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestViewProtectsPartsOfFiles: in package.json only the scripts the contract runs are
// the judge's — a changed test script is reported and restored, a new dependency
// stays — and a file whose part cannot be read is protected whole instead.
func TestViewProtectsPartsOfFiles(t *testing.T) {
	root, meta := t.TempDir(), t.TempDir()
	rules := ParseRules([]string{"package.json#scripts", "tools/package.json#scripts"})
	writeFiles(t, root, map[string]string{
		"package.json":       `{"name": "calc", "scripts": {"test": "node --test", "lint": "eslint ."}}`,
		"tools/package.json": "[1, 2]",
	})
	base, err := TakeBase(filepath.Join(meta, "base"), root, "snapshot", rules)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{
		"package.json":       `{"name": "calc", "scripts": {"test": "exit 0", "lint": "true"}, "dependencies": {"left-pad": "1.0.0"}}`,
		"tools/package.json": `{"scripts": {"test": "exit 0"}}`,
	})
	v, changes, err := Open(root, base, rules, Options{Restore: true, Journal: filepath.Join(meta, "j"),
		Parts: fileparts.Restore, Names: fileparts.ScriptsRun([]string{"npm test"})})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(changes) != 2 || changes[0].Path != "package.json" || strings.Join(changes[0].Parts, ",") != "scripts.test" {
		t.Fatalf("changes %+v", changes)
	}
	pkg := readFile(t, filepath.Join(root, "package.json"))
	if !strings.Contains(pkg, `"node --test"`) || !strings.Contains(pkg, "left-pad") || !strings.Contains(pkg, `"lint": "true"`) {
		t.Fatalf("judged package.json: %s", pkg)
	}
	if got := readFile(t, filepath.Join(root, "tools/package.json")); got != "[1, 2]" || !strings.Contains(changes[1].Parts[0], "whole file") {
		t.Fatalf("an unreadable part is not protected whole: %q %+v", got, changes[1])
	}
}

// TestRecoverAllSparesLiveViews: a view whose runner died is put back at the next
// runner's start (held-out test removed, the worker's test back); a view still up in a
// live runner is left alone.
func TestRecoverAllSparesLiveViews(t *testing.T) {
	metaRoot := t.TempDir()
	open := func(task string) (string, *View) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"calc_test.go": "base\n"})
		base, err := TakeBase(filepath.Join(metaRoot, task, "judge", "base"), root, "snapshot", goRules)
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, root, map[string]string{"calc_test.go": "worker\n"})
		v, _, err := Open(root, base, goRules, Options{Restore: true, Journal: filepath.Join(metaRoot, task, "judge", "journal"),
			HeldOut: []models.HeldOutTest{{Path: "held_test.go", Content: "secret"}}})
		if err != nil {
			t.Fatal(err)
		}
		return root, v
	}
	deadRoot, dead := open("1")
	liveRoot, live := open("2")
	// The dead runner's lock goes with its process; here, with its file.
	dead.lock.Close()
	closed, err := RecoverAll(metaRoot)
	if err != nil || len(closed) != 1 {
		t.Fatalf("RecoverAll = %v, %v; want the dead view only", closed, err)
	}
	if got := readFile(t, filepath.Join(deadRoot, "calc_test.go")); got != "worker\n" {
		t.Fatalf("the dead view's worker file: %q", got)
	}
	if _, err := os.Stat(filepath.Join(deadRoot, "held_test.go")); !os.IsNotExist(err) {
		t.Fatalf("the dead view's held-out test is still in the workspace: %v", err)
	}
	if got := readFile(t, filepath.Join(liveRoot, "held_test.go")); got != "secret" {
		t.Fatalf("the live view was put back under its runner: %q", got)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
}
