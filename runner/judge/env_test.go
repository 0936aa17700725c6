package judge

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPrepareEnv: the Env is the workspace without .git and the runner's directory,
// links copied as links (never followed), special files left out, permission bits
// and times kept; it is made once per key, and a crashed preparer's leftovers go.
func TestPrepareEnv(t *testing.T) {
	ws, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, ws, map[string]string{
		"a.txt": "a\n", "bin/run.sh": "#!/bin/sh\n", "node_modules/p/i.js": "x\n",
		".git/HEAD": "ref\n", ".countersign/brief.md": "brief\n", "sub/.git/HEAD": "nested stays\n",
	})
	writeFiles(t, outside, map[string]string{"secret": "s\n"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(ws, "bin/run.sh"), 0o4755)) // set-uid: dropped
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "out.link")))
	must(os.Symlink(outside, filepath.Join(ws, "outdir")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	owners := os.Geteuid() == 0 && !inUserNamespace()
	if owners {
		must(os.Chown(filepath.Join(ws, "a.txt"), 1234, 1234))
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	must(os.Chtimes(filepath.Join(ws, "node_modules/p/i.js"), old, old))
	// A crashed preparer's half copy.
	writeFiles(t, filepath.Join(root, "judge", "envs", ".tmp-k"), map[string]string{"half": "h\n"})

	env, err := PrepareEnv(context.Background(), ws, root, "k", ".countersign")
	if err != nil {
		t.Fatal(err)
	}
	if env != EnvDir(root, "k") {
		t.Fatalf("env at %s", env)
	}
	got := treeState(t, env)
	want := map[string]string{
		"a.txt": "ffalse:a\n", "bin": "d", "bin/run.sh": "ftrue:#!/bin/sh\n", "node_modules": "d", "node_modules/p": "d",
		"node_modules/p/i.js": "ffalse:x\n", "sub": "d", "sub/.git": "d", "sub/.git/HEAD": "ffalse:nested stays\n",
		"out.link": "l:" + filepath.Join(outside, "secret"), "outdir": "l:" + outside,
	}
	if d := diffStates(got, want); len(d) > 0 {
		t.Fatalf("env: %v", d)
	}
	st, err := os.Stat(filepath.Join(env, "bin/run.sh"))
	must(err)
	if st.Mode()&os.ModeSetuid != 0 {
		t.Fatal("a set-uid bit was copied")
	}
	if owners {
		st, err := os.Stat(filepath.Join(env, "a.txt"))
		must(err)
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 1234 || sys.Gid != 1234 {
			t.Fatalf("owner %d:%d, want the workspace's 1234:1234", sys.Uid, sys.Gid)
		}
	}
	st, err = os.Stat(filepath.Join(env, "node_modules/p/i.js"))
	must(err)
	if !st.ModTime().Equal(old) {
		t.Fatalf("mtime %v, want %v", st.ModTime(), old)
	}
	if _, err := os.Stat(filepath.Join(root, "judge", "envs", ".tmp-k")); !os.IsNotExist(err) {
		t.Fatalf("a crashed preparer's copy is left: %v", err)
	}
	// Made once: a second preparation of the key reuses it as it is.
	writeFiles(t, ws, map[string]string{"a.txt": "changed\n"})
	env2, err := PrepareEnv(context.Background(), ws, root, "k")
	if err != nil || env2 != env || readFile(t, filepath.Join(env, "a.txt")) != "a\n" {
		t.Fatalf("second preparation: %s %v %q", env2, err, readFile(t, filepath.Join(env, "a.txt")))
	}
	for _, bad := range []string{"", "../k", "a/b", ".hidden"} {
		if _, err := PrepareEnv(context.Background(), ws, root, bad); err == nil {
			t.Fatalf("key %q accepted", bad)
		}
	}
}

// TestEnvKey: the key follows the base's tree and the ignored files' names, sizes and
// times, not the tracked files' times.
func TestEnvKey(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "a\n", "node_modules/p/i.js": "x\n"})
	key := func(tree string) string {
		k, err := EnvKey(tree, ws, []string{"node_modules/"})
		if err != nil {
			t.Fatal(err)
		}
		if !envKeyRE.MatchString(k) {
			t.Fatalf("key %q is not a name", k)
		}
		return k
	}
	k1 := key("tree1")
	writeFiles(t, ws, map[string]string{"a.txt": "tracked: the tree says\n"})
	if key("tree1") != k1 {
		t.Fatal("a tracked file's write changed the key")
	}
	if key("tree2") == k1 {
		t.Fatal("another tree, the same key")
	}
	writeFiles(t, ws, map[string]string{"node_modules/p/i.js": "reinstalled\n"})
	if key("tree1") == k1 {
		t.Fatal("a reinstalled dependency kept the key")
	}
	if _, err := EnvKey("t", ws, []string{"../etc"}); err == nil {
		t.Fatal("an ignored path outside the workspace was accepted")
	}
}
