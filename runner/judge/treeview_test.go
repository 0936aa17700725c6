package judge

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/judge/fileparts"
)

// canMount fails the test (or skips it outside CI) where this process may not mount
// an overlay.
func canMount(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"env", "upper", "work", "root"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	v := &TreeView{dir: dir, root: filepath.Join(dir, "root")}
	err := v.mount(&ViewRequest{Env: filepath.Join(dir, "env")})
	if err == nil {
		if err := unmount(v.root); err != nil {
			t.Fatal(err)
		}
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("overlay mounts are not available: %v", err)
	}
	t.Skipf("overlay mounts are not available: %v", err)
}

// mechanisms runs f once per way of making a view.
func mechanisms(t *testing.T, f func(t *testing.T, noMount bool)) {
	t.Run("overlay", func(t *testing.T) { canMount(t); f(t, false) })
	t.Run("copy", func(t *testing.T) { f(t, true) })
}

// fixture is a git workspace at its base, the base's Env, and a candidate commit.
type fixture struct {
	repo, env, meta, outside string
	base, cand               string
}

// newFixture lays out the workspace with base, commits it, prepares the Env, lets
// worker change the workspace, and commits the candidate.
func newFixture(t *testing.T, base map[string]string, worker func(dir string)) *fixture {
	t.Helper()
	f := &fixture{repo: t.TempDir(), meta: t.TempDir(), outside: t.TempDir()}
	gitRun(t, f.repo, "init", "-q")
	writeFiles(t, f.repo, base)
	f.base = commitAll(t, f.repo, "base")
	env, err := PrepareEnv(context.Background(), f.repo, filepath.Join(f.meta, "data"), "k1", ".countersign")
	if err != nil {
		t.Fatal(err)
	}
	f.env = env
	worker(f.repo)
	f.cand = commitAll(t, f.repo, "candidate")
	return f
}

func (f *fixture) request(noMount bool) ViewRequest {
	return ViewRequest{Env: f.env, Dir: filepath.Join(f.meta, "meta", "1", "judge", "view"), Trees: gitTrees{f.repo},
		Base: f.base, Candidate: f.cand, Rules: goRules, Restore: true, NoMount: noMount}
}

var changeKindsBase = map[string]string{
	".gitignore":             "node_modules/\n*.pyc\n",
	"a.txt":                  "a\n",
	"b.txt":                  "b\n",
	"c.sh":                   "echo c\n",
	"d.txt":                  "d\n",
	"e/inner.txt":            "e\n",
	"e/cache.pyc":            "ignored, under a directory that becomes a file\n",
	"f":                      "f is a file\n",
	"olddir/sub/only.txt":    "the directories above go with it\n",
	"lib/x.go":               "package lib\n",
	"calc_test.go":           "base test\n",
	"gone_test.go":           "base gone\n",
	"testdata/in.txt":        "2 3\n",
	"node_modules/p/i.js":    "module.exports = 1\n",
	"node_modules/p/pkg.pyc": "ignored\n",
}

// changeKindsWorker makes one change of each kind, honest and not.
func changeKindsWorker(t *testing.T) func(dir string) {
	return func(dir string) {
		j := func(p string) string { return filepath.Join(dir, p) }
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		writeFiles(t, dir, map[string]string{"a.txt": "a, modified\n", "new/deep/n.txt": "added\n",
			"calc_test.go": "worker's test\n", "zz_test.go": "func TestMain() {}\n"})
		must(os.Remove(j("b.txt")))
		must(os.Chmod(j("c.sh"), 0o755))
		must(os.Remove(j("d.txt")))
		must(os.Symlink("a.txt", j("d.txt")))
		must(os.RemoveAll(j("e")))
		must(os.WriteFile(j("e"), []byte("e is a file now\n"), 0o644))
		must(os.Remove(j("f")))
		writeFiles(t, dir, map[string]string{"f/inner.txt": "f is a directory now\n"})
		must(os.Symlink("../../../etc/passwd", j("out.link")))
		must(os.Remove(j("gone_test.go")))
		must(os.RemoveAll(j("olddir")))
	}
}

// TestOpenViewShowsCandidateWithBaseProtected: the view is the candidate's tree and
// the base's ignored files, with every protected path as the base had it, whatever
// the kind of change; the protected changes are reported; the extra files are there.
func TestOpenViewShowsCandidateWithBaseProtected(t *testing.T) {
	mechanisms(t, func(t *testing.T, noMount bool) {
		f := newFixture(t, changeKindsBase, changeKindsWorker(t))
		want := treeState(t, f.repo) // candidate ∪ ignored, as the worker left it
		want["calc_test.go"] = "ffalse:base test\n"
		want["gone_test.go"] = "ffalse:base gone\n"
		delete(want, "zz_test.go")
		want["held/held_test.go"], want["held"] = "ffalse:held out\n", "d"
		req := f.request(noMount)
		req.Extra = []File{{Rel: "held/held_test.go", Content: []byte("held out\n")}}
		v, changes, err := OpenView(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if wantMech := map[bool]string{false: MechanismOverlay, true: MechanismCopy}[noMount]; v.Mechanism() != wantMech {
			t.Fatalf("mechanism %s, want %s", v.Mechanism(), wantMech)
		}
		if d := diffStates(treeState(t, v.Root()), want); len(d) > 0 {
			t.Fatalf("the view differs from the candidate with the base's protected files:\n%s", strings.Join(d, "\n"))
		}
		var got []string
		for _, c := range changes {
			got = append(got, c.Path+" "+c.Change)
		}
		if strings.Join(got, ",") != "calc_test.go changed,gone_test.go deleted,zz_test.go added" {
			t.Fatalf("protected changes %v", got)
		}
		if !strings.Contains(changes[0].Diff, "+worker's test") {
			t.Fatalf("diff %q", changes[0].Diff)
		}
	})
}

// TestOpenViewTestsMayChange: without Restore the protected changes are applied and
// reported; with the restore defence switched off, the same happens under Restore —
// which the content test above would catch.
func TestOpenViewTestsMayChange(t *testing.T) {
	f := newFixture(t, changeKindsBase, changeKindsWorker(t))
	for _, tc := range []struct {
		name          string
		restore, knob bool
	}{{"tests_may_change", false, false}, {"restore switched off", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			defencesOff.restore = tc.knob
			defer func() { defencesOff.restore = false }()
			req := f.request(true)
			req.Restore = tc.restore
			v, changes, err := OpenView(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if len(changes) != 3 {
				t.Fatalf("changes %+v", changes)
			}
			if d := diffStates(treeState(t, v.Root()), treeState(t, f.repo)); len(d) > 0 {
				t.Fatalf("the view is not the candidate: %v", d)
			}
		})
	}
}

// TestOpenViewProtectsParts: package.json protected in its scripts: the worker's new
// dependency is in the view, its changed test script is not.
func TestOpenViewProtectsParts(t *testing.T) {
	// tools/package.json has no scripts object to protect at base: the worker who
	// writes one there gets the whole file protected, not a part it could fill.
	base := map[string]string{"package.json": `{"name": "calc", "scripts": {"test": "node --test"}}`, "tools/package.json": "[1, 2]"}
	f := newFixture(t, base, func(dir string) {
		writeFiles(t, dir, map[string]string{
			"package.json":       `{"name": "calc", "scripts": {"test": "exit 0"}, "dependencies": {"left-pad": "1.0.0"}}`,
			"tools/package.json": `{"scripts": {"test": "exit 0"}}`,
		})
	})
	req := f.request(true)
	req.Rules = ParseRules([]string{"package.json#scripts", "tools/package.json#scripts"})
	req.Parts, req.Names = fileparts.Restore, fileparts.ScriptsRun([]string{"npm test"})
	v, changes, err := OpenView(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(changes) != 2 || strings.Join(changes[0].Parts, ",") != "scripts.test" {
		t.Fatalf("changes %+v", changes)
	}
	pkg := readFile(t, filepath.Join(v.Root(), "package.json"))
	if !strings.Contains(pkg, `"node --test"`) || !strings.Contains(pkg, "left-pad") {
		t.Fatalf("judged package.json: %s", pkg)
	}
	if got := readFile(t, filepath.Join(v.Root(), "tools/package.json")); got != "[1, 2]" || len(changes[1].Parts) != 1 || !strings.Contains(changes[1].Parts[0], "whole file") {
		t.Fatalf("a part that cannot be read is not protected whole: %q %+v", got, changes[1])
	}
}

// TestOpenViewBlocks: a candidate that replaces a directory of protected files with a
// link out of the view, or a judge's file's directory with one, is blocked and
// nothing is written outside; each defence switched off lets the cheat through.
func TestOpenViewBlocks(t *testing.T) {
	base := map[string]string{"calc_test.go": "base\n", "testdata/in.txt": "2 3\n", "held/keep.txt": "k\n"}
	var outside string
	f := newFixture(t, base, func(dir string) {
		outside = t.TempDir()
		os.RemoveAll(filepath.Join(dir, "testdata"))
		os.RemoveAll(filepath.Join(dir, "held"))
		if os.Symlink(outside, filepath.Join(dir, "testdata")) != nil || os.Symlink(outside, filepath.Join(dir, "held")) != nil {
			t.Fatal("symlink")
		}
	})
	open := func(extra []File) error {
		req := f.request(true)
		req.Extra = extra
		v, _, err := OpenView(context.Background(), req)
		if err == nil {
			defer v.Close()
			if _, serr := os.Stat(filepath.Join(v.Root(), "testdata", "in.txt")); serr != nil {
				return errors.New("the view lacks the base's testdata/in.txt")
			}
		}
		return err
	}
	var be *BlockedError
	if err := open(nil); !errors.As(err, &be) || be.Path != "testdata" {
		t.Fatalf("a link over protected files: %v, want BlockedError(testdata)", err)
	}
	defencesOff.conflicts = true
	err := open(nil)
	defencesOff.conflicts = false
	if err == nil || errors.As(err, &be) {
		t.Fatalf("with the conflict check off: %v, want the base's tests gone", err)
	}
	held := []File{{Rel: "held/h_test.go", Content: []byte("held\n")}}
	defencesOff.conflicts = true // get past testdata, to the held-out file
	defer func() { defencesOff.conflicts, defencesOff.links = false, false }()
	if err := open(held); !errors.As(err, &be) || be.Path != "held" {
		t.Fatalf("a held-out test below a link: %v, want BlockedError(held)", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "h_test.go")); !os.IsNotExist(err) {
		t.Fatalf("written through the link: %v", err)
	}
	defencesOff.links = true
	_ = open(held)
	if got := readFile(t, filepath.Join(outside, "h_test.go")); got != "held\n" {
		t.Fatalf("with links followed the write should land outside (the test's premise): %q", got)
	}
}

// climbingTrees is a store that names a path climbing out of the view.
type climbingTrees struct{ gitTrees }

func (c climbingTrees) Changes(ctx context.Context, from, to string) ([]Change, error) {
	return []Change{{Path: "../../escape.txt", NewMode: 0o100644, NewBlob: "x"}}, nil
}

func TestOpenViewRefusesPathsOutside(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a\n"}, func(string) {})
	req := f.request(true)
	req.Trees = climbingTrees{}
	var be *BlockedError
	if _, _, err := OpenView(context.Background(), req); !errors.As(err, &be) || be.Reason == "" {
		t.Fatalf("a path climbing out: %v", err)
	}
	req = f.request(true)
	req.Extra = []File{{Rel: "../x_test.go"}}
	if _, _, err := OpenView(context.Background(), req); err == nil {
		t.Fatal("an extra file climbing out was accepted")
	}
}

// TestViewLeavesEnvUntouched: code under test that writes into node_modules, a
// tracked file and the tree's modes and times inside the view leaves the Env byte for
// byte as it was, and another view of it sees none of it. A view that shares the Env
// (the defence switched off) lets the writes through, which this test catches.
func TestViewLeavesEnvUntouched(t *testing.T) {
	hostile := `set -e
echo pwned >> node_modules/p/i.js
echo pwned > lib/x.go
rm node_modules/p/pkg.pyc
chmod 777 lib
touch -d 2001-01-01 a.txt
mkdir -p node_modules/evil && echo x > node_modules/evil/e.js
ln node_modules/p/i.js hard.js && echo more >> hard.js
rm -rf testdata
`
	run := func(t *testing.T, f *fixture, noMount bool) (before, after string) {
		before = treeDigest(t, f.env)
		v, _, err := OpenView(context.Background(), f.request(noMount))
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		cmd := exec.Command("sh", "-c", hostile)
		cmd.Dir = v.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the hostile script failed (the writes must happen): %v %s", err, out)
		}
		if got := readFile(t, filepath.Join(v.Root(), "node_modules/p/i.js")); !strings.Contains(got, "pwned") {
			t.Fatalf("the hostile write did not land in the view: %q", got)
		}
		return before, treeDigest(t, f.env)
	}
	mechanisms(t, func(t *testing.T, noMount bool) {
		f := newFixture(t, changeKindsBase, changeKindsWorker(t))
		if before, after := run(t, f, noMount); before != after {
			t.Fatal("hostile writes in the view changed the Env")
		}
		v, _, err := OpenView(context.Background(), f.request(noMount))
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if got := readFile(t, filepath.Join(v.Root(), "node_modules/p/i.js")); got != "module.exports = 1\n" {
			t.Fatalf("a later view sees an earlier view's writes: %q", got)
		}
	})
	t.Run("defence off: the view shares the Env", func(t *testing.T) {
		canMount(t)
		f := newFixture(t, changeKindsBase, changeKindsWorker(t))
		defencesOff.shareEnv = true
		defer func() { defencesOff.shareEnv = false }()
		if before, after := run(t, f, false); before == after {
			t.Fatal("a view sharing the Env's inodes left it unchanged: the test cannot see a leak")
		}
	})
}

// TestTwoViewsOfOneEnv: two views of one Env at once are independent, each closes
// twice without harm, and a view held busy by a leftover process still closes.
func TestTwoViewsOfOneEnv(t *testing.T) {
	mechanisms(t, func(t *testing.T, noMount bool) {
		f := newFixture(t, changeKindsBase, changeKindsWorker(t))
		r1, r2 := f.request(noMount), f.request(noMount)
		r2.Dir = filepath.Join(f.meta, "meta", "2", "judge", "view")
		r2.Candidate = f.base
		v1, _, err := OpenView(context.Background(), r1)
		if err != nil {
			t.Fatal(err)
		}
		v2, changes, err := OpenView(context.Background(), r2)
		if err != nil || len(changes) != 0 {
			t.Fatal(changes, err)
		}
		if err := os.WriteFile(filepath.Join(v1.Root(), "node_modules/p/i.js"), []byte("v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(v2.Root(), "node_modules/p/i.js")); got != "module.exports = 1\n" {
			t.Fatalf("v2 sees v1's write: %q", got)
		}
		if got := readFile(t, filepath.Join(v2.Root(), "a.txt")); got != "a\n" {
			t.Fatalf("v2 (the base) shows %q", got)
		}
		// A process left behind holds v1 (its working directory is in it).
		busy := exec.Command("sleep", "30")
		busy.Dir = v1.Root()
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { busy.Process.Kill(); busy.Wait() }()
		for _, v := range []*TreeView{v1, v1, v2, v2} {
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []ViewRequest{r1, r2} {
			if _, err := os.Lstat(r.Dir); !os.IsNotExist(err) {
				t.Fatalf("%s left after Close: %v", r.Dir, err)
			}
		}
	})
}

// TestRecoverViews: a view whose runner died is unmounted and removed at the next
// runner's start; a live one is left alone.
func TestRecoverViews(t *testing.T) {
	mechanisms(t, func(t *testing.T, noMount bool) {
		f := newFixture(t, changeKindsBase, changeKindsWorker(t))
		dead, live := f.request(noMount), f.request(noMount)
		live.Dir = filepath.Join(f.meta, "meta", "2", "judge", "view")
		vd, _, err := OpenView(context.Background(), dead)
		if err != nil {
			t.Fatal(err)
		}
		vl, _, err := OpenView(context.Background(), live)
		if err != nil {
			t.Fatal(err)
		}
		defer vl.Close()
		vd.lock.Close() // the dead runner's lock goes with its process
		if _, _, err := OpenView(context.Background(), live); err == nil {
			t.Fatal("a second view opened over a live one")
		}
		done, err := RecoverViews(filepath.Join(f.meta, "meta"))
		if err != nil || len(done) != 1 || done[0] != dead.Dir {
			t.Fatalf("RecoverViews = %v, %v; want the dead view only", done, err)
		}
		if _, err := os.Lstat(dead.Dir); !os.IsNotExist(err) {
			t.Fatalf("the dead view is still there: %v", err)
		}
		if got := readFile(t, filepath.Join(vl.Root(), "a.txt")); got != "a, modified\n" {
			t.Fatalf("the live view: %q", got)
		}
	})
}
