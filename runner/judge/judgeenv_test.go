package judge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func envMap(vars []string) map[string]string {
	m := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// TestEnvIsBuiltFromNothingTheWorkerWrote: the judged run's environment holds only the
// judge's variables and the stacks' JudgeEnv, whatever the runner's environment
// carries (GOFLAGS, PYTEST_ADDOPTS, NODE_OPTIONS, npm_config_*, MAKEFLAGS); HOME and
// TMPDIR are fresh per run under the judge's root; a stack cannot set PATH or HOME;
// {etc} files exist, empty.
func TestEnvIsBuiltFromNothingTheWorkerWrote(t *testing.T) {
	for k, v := range map[string]string{"GOFLAGS": "-run=Nothing", "PYTEST_ADDOPTS": "-p hack", "NODE_OPTIONS": "--require=/x",
		"npm_config_script_shell": "/x", "MAKEFLAGS": "-k", "PYTHONPATH": "/x", "GOENV": "/x", "LANG": "C.UTF-8"} {
		t.Setenv(k, v)
	}
	root, dir := t.TempDir(), t.TempDir()
	stacks := contract.DefaultStacks()
	stacks = append(stacks, contract.Stack{Name: "evil", JudgeEnv: []string{"PATH=/tmp", "HOME=/tmp", "TMPDIR=/tmp"}})
	e1, err := NewEnv(EnvOptions{Root: root, Dir: dir, Stacks: stacks, GoCache: t.TempDir()})
	must(t, err)
	defer e1.Close()
	e2, err := NewEnv(EnvOptions{Root: root, Dir: dir, Stacks: stacks, GoCache: t.TempDir()})
	must(t, err)
	defer e2.Close()
	m := envMap(e1.Vars())
	allowed := []string{"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
		"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TERMINAL_PROMPT", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME"}
	for _, st := range contract.DefaultStacks() {
		for _, kv := range st.JudgeEnv {
			k, _, _ := strings.Cut(kv, "=")
			allowed = append(allowed, k)
		}
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			t.Errorf("the judged run's environment has %s=%s, which the judge does not list", k, m[k])
		}
	}
	want := map[string]string{"GOENV": "off", "GOFLAGS": "-buildvcs=false", "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1",
		"PYTHONPATH": e1.PySite, "npm_config_script_shell": "/bin/sh", "NPM_CONFIG_USERCONFIG": e1.Etc + "/npmrc",
		"HOME": e1.Home, "TMPDIR": e1.Tmp, "GOCACHE": e1.GoCache, "GOMODCACHE": ModCache(root), "GIT_CONFIG_GLOBAL": "/dev/null"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s=%q, want %q", k, m[k], v)
		}
	}
	if _, ok := m["MAKEFLAGS"]; ok {
		t.Error("MAKEFLAGS leaked from the runner's environment")
	}
	if strings.Contains(m["PATH"], "/tmp") || !strings.HasPrefix(e1.Home, root) || e1.Home == e2.Home || e1.Tmp == e2.Tmp {
		t.Errorf("PATH %q, homes %q and %q: want fixed and fresh per run under %s", m["PATH"], e1.Home, e2.Home, root)
	}
	for _, f := range []string{"npmrc", "npmrc-global"} {
		if b, err := os.ReadFile(filepath.Join(e1.Etc, f)); err != nil || len(b) != 0 {
			t.Errorf("%s: %q, %v; want an empty file", f, b, err)
		}
	}
	must(t, e1.Close())
	if _, err := os.Stat(e1.Run); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", e1.Run, err)
	}
}

// TestJudgePathDropsWhatAWorkerCouldWrite: a PATH candidate inside the judged dir or
// an untrusted hierarchy (also through a symbolic link), a world-writable one, one
// under a world-writable parent and a missing one are dropped; system ones are kept.
func TestJudgePathDropsWhatAWorkerCouldWrite(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	must(t, os.Chmod(dir, 0o750))
	must(t, os.Chmod(data, 0o750))
	inDir, inData := filepath.Join(dir, "node_modules", ".bin"), filepath.Join(data, "agents", "a", "home", "bin")
	world := filepath.Join(t.TempDir(), "world")
	for _, d := range []string{inDir, inData, world} {
		must(t, os.MkdirAll(d, 0o750))
	}
	must(t, os.Chmod(world, 0o777))
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(inData, link))
	got := JudgePath([]string{inDir, "/usr/bin", inData, link, world, "/nonexistent/bin", "relative/bin", "/bin"}, []string{dir, data})
	if !slices.Contains(got, "/usr/bin") {
		t.Fatalf("JudgePath = %q, want /usr/bin kept", got)
	}
	for _, bad := range []string{inDir, inData, link, world, "/nonexistent/bin", "relative/bin"} {
		if slices.Contains(got, bad) {
			t.Errorf("JudgePath kept %s: %q", bad, got)
		}
	}
	if r, _ := filepath.EvalSymlinks("/bin"); r == "/usr/bin" && slices.Contains(got, "/bin") {
		t.Errorf("JudgePath kept /bin, the same directory as /usr/bin: %q", got)
	}
}

// TestGoCacheLayerKeepsRunsApart: what one judged run writes into its GOCACHE (the
// code under test may write there) reaches neither the judge's shared cache nor a
// later run; the shared cache's entries are readable in every run.
func TestGoCacheLayerKeepsRunsApart(t *testing.T) {
	root, dir, shared := t.TempDir(), t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(shared, "warm"), []byte("judge"), 0o640))
	stacks := contract.DefaultStacks()
	e1, err := NewEnv(EnvOptions{Root: root, Dir: dir, Stacks: stacks, GoCache: shared})
	must(t, err)
	if !e1.Overlay {
		if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
			t.Fatal("no overlay mounted as root")
		}
		t.Logf("no overlay here (needs CAP_SYS_ADMIN): each run has an empty cache")
	}
	if e1.Overlay {
		if b, err := os.ReadFile(filepath.Join(e1.GoCache, "warm")); err != nil || string(b) != "judge" {
			t.Fatalf("the shared entry through the layer: %q, %v", b, err)
		}
	}
	must(t, os.WriteFile(filepath.Join(e1.GoCache, "poison"), []byte("x"), 0o640))
	if e1.Overlay {
		must(t, os.WriteFile(filepath.Join(e1.GoCache, "warm"), []byte("poisoned"), 0o640))
	}
	must(t, e1.Close())
	if b, _ := os.ReadFile(filepath.Join(shared, "warm")); string(b) != "judge" {
		t.Errorf("the shared cache entry became %q", b)
	}
	e2, err := NewEnv(EnvOptions{Root: root, Dir: dir, Stacks: stacks, GoCache: shared})
	must(t, err)
	defer e2.Close()
	for _, f := range []string{filepath.Join(shared, "poison"), filepath.Join(e2.GoCache, "poison")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s: a run's write reached the shared cache or a later run", f)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
