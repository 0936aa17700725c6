package judge

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/judge/fileparts"
)

// These tests prove, with the real toolchains, that each class of attack the rules
// now cover really passes a failing test run (so the rule is needed), then that the
// rules protect the file the attack needs. A missing tool skips them, except in CI.

// tool finds a program, preferring the given paths (Debian's python3 has pytest).
func tool(t *testing.T, name string, prefer ...string) string {
	t.Helper()
	for _, p := range prefer {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not found: %v", name, err)
	}
	return p
}

// runIn runs a command in dir with a small environment of its own (a fresh HOME, so
// no user configuration of this machine takes part) and returns its exit code.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "PYTHONDONTWRITEBYTECODE=1",
		"npm_config_cache=" + filepath.Join(home, "npm-cache"), "npm_config_update_notifier=false"}, env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("%s %v: %v", name, args, err)
	return 0, ""
}

// TestRealPytestShim: a pytest.py at the root replaces pytest for `python3 -m pytest`
// (the current directory is first on sys.path), so a failing suite exits 0; the
// python rules protect it.
func TestRealPytestShim(t *testing.T) {
	py := tool(t, "python3", "/usr/bin/python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"calc.py":      "def add(a, b):\n    return a - b\n",
		"test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
		"pytest.ini":   "[pytest]\naddopts = -p no:cacheprovider\n",
	})
	if code, out := runIn(t, dir, nil, py, "-m", "pytest", "-q"); code == 0 {
		t.Fatalf("the wrong add passed before any cheat:\n%s", out)
	} else if !strings.Contains(out, "1 failed") {
		t.Fatalf("pytest did not run (is it installed for %s?):\n%s", py, out)
	}
	writeFiles(t, dir, map[string]string{"pytest.py": "import sys\nprint('1 passed')\nsys.exit(0)\n"})
	if code, out := runIn(t, dir, nil, py, "-m", "pytest", "-q"); code != 0 {
		t.Fatalf("the pytest.py shim did not take over (exit %d):\n%s", code, out)
	}
	if got := protectedBy([]string{"python"}, false, "pytest.py"); got != "whole" {
		t.Fatalf("pytest.py protected %q", got)
	}
}

// TestRealNpmrcAndNodeTestNames: `node --test` (Node 20) runs src/calc-test.js, a
// name the old globs missed, so it is a test file to protect; a project .npmrc with
// script-shell makes `npm test` pass without running it. The node rules protect both.
func TestRealNpmrcAndNodeTestNames(t *testing.T) {
	npm := tool(t, "npm")
	tool(t, "node")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json": `{"name":"calc","version":"1.0.0","scripts":{"test":"node --test"}}`,
		"src/calc.js":  "exports.add = (a, b) => a - b\n",
		"src/calc-test.js": "const test = require('node:test'); const assert = require('node:assert');\n" +
			"const { add } = require('./calc');\ntest('add', () => assert.strictEqual(add(2, 2), 4));\n",
	})
	code, out := runIn(t, dir, nil, npm, "test")
	if code == 0 || !strings.Contains(out, "# fail 1") {
		t.Fatalf("node --test did not run src/calc-test.js and fail it (exit %d):\n%s", code, out)
	}
	if got := protectedBy([]string{"node"}, false, "src/calc-test.js"); got != "whole" {
		t.Fatalf("src/calc-test.js protected %q", got)
	}
	writeFiles(t, dir, map[string]string{".npmrc": "script-shell=/bin/true\n"})
	if code, out := runIn(t, dir, nil, npm, "test"); code != 0 {
		t.Fatalf("the .npmrc script-shell did not take over npm test (exit %d):\n%s", code, out)
	}
	if got := protectedBy([]string{"node"}, false, ".npmrc"); got != "whole" {
		t.Fatalf(".npmrc protected %q", got)
	}
}

// TestRealRecipeScript: `make test` and `npm test` run scripts that the protected
// recipe and script name; a worker who rewrites those scripts passes both, so
// fileparts.FilesRun gives their paths to protect, and the rules made of them match.
func TestRealRecipeScript(t *testing.T) {
	mk := tool(t, "make")
	npm := tool(t, "npm")
	tool(t, "node")
	base := map[string]string{
		"Makefile":             "test:\n\t./scripts/run-tests.sh\n",
		"scripts/run-tests.sh": "#!/bin/sh\necho 'add(2, 2) = 0, want 4'\nexit 1\n",
		"package.json":         `{"name":"calc","version":"1.0.0","scripts":{"test":"node scripts/test.js"}}`,
		"scripts/test.js":      "console.error('add(2, 2) = 0, want 4'); process.exit(1)\n",
	}
	dir := t.TempDir()
	writeFiles(t, dir, base)
	if err := os.Chmod(filepath.Join(dir, "scripts/run-tests.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _ := runIn(t, dir, nil, mk, "test"); code == 0 {
		t.Fatal("make test passed at base")
	}
	if code, _ := runIn(t, dir, nil, npm, "test"); code == 0 {
		t.Fatal("npm test passed at base")
	}
	writeFiles(t, dir, map[string]string{"scripts/run-tests.sh": "#!/bin/sh\nexit 0\n", "scripts/test.js": "\n"})
	if code, out := runIn(t, dir, nil, mk, "test"); code != 0 {
		t.Fatalf("the rewritten script did not pass make test:\n%s", out)
	}
	if code, out := runIn(t, dir, nil, npm, "test"); code != 0 {
		t.Fatalf("the rewritten script did not pass npm test:\n%s", out)
	}
	globs := fileparts.FilesRun([]string{"make test", "npm test"}, func(rel string) ([]byte, bool) {
		s, ok := base[rel]
		return []byte(s), ok
	})
	rules := ParseRules(globs)
	for _, rel := range []string{"scripts/run-tests.sh", "scripts/test.js"} {
		if whole, _ := classify(rules, rel); !whole {
			t.Errorf("%s not protected by %v", rel, globs)
		}
	}
}

// TestRealGoReplace: a replace line that points the assertion module at the
// worker's copy passes a failing `go test`; go.mod#replace is protected, and the
// go.mod Restore judges makes the same run fail again.
func TestRealGoReplace(t *testing.T) {
	goBin := tool(t, "go")
	gocache, _ := exec.Command(goBin, "env", "GOCACHE").Output()
	env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GONOSUMDB=*",
		"GOCACHE=" + strings.TrimSpace(string(gocache)), "GOPATH=" + t.TempDir()}
	baseMod := "module example.com/calc\n\ngo 1.22\n\nrequire example.com/check v0.0.0\n\nreplace example.com/check => ./third_party/check\n"
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":                   baseMod,
		"calc.go":                  "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go":             "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/check\"\n)\n\nfunc TestAdd(t *testing.T) { check.Equal(t, Add(2, 2), 4) }\n",
		"third_party/check/go.mod": "module example.com/check\n\ngo 1.22\n",
		"third_party/check/check.go": "package check\n\nimport \"testing\"\n\n// Equal fails t when got is not want.\n" +
			"func Equal(t *testing.T, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}\n}\n",
	})
	if code, out := runIn(t, dir, env, goBin, "test", "./..."); code == 0 || !strings.Contains(out, "got 0, want 4") {
		t.Fatalf("the wrong Add did not fail at base (exit %d):\n%s", code, out)
	}
	workerMod := strings.Replace(baseMod, "./third_party/check", "./fake", 1)
	writeFiles(t, dir, map[string]string{
		"go.mod":        workerMod,
		"fake/go.mod":   "module example.com/check\n\ngo 1.22\n",
		"fake/check.go": "package check\n\nimport \"testing\"\n\nfunc Equal(t *testing.T, got, want int) {}\n",
	})
	if code, out := runIn(t, dir, env, goBin, "test", "./..."); code != 0 {
		t.Fatalf("the replace => ./fake did not pass go test (exit %d):\n%s", code, out)
	}
	if got := protectedBy([]string{"go"}, false, "go.mod"); !strings.Contains(got, "go.mod#replace") {
		t.Fatalf("go.mod protected %q", got)
	}
	judged, changed, err := fileparts.Restore("go.mod", "replace", []byte(baseMod), []byte(workerMod), nil)
	if err != nil || len(changed) == 0 {
		t.Fatalf("Restore: %v %v", changed, err)
	}
	writeFiles(t, dir, map[string]string{"go.mod": string(judged)})
	if code, out := runIn(t, dir, env, goBin, "test", "./..."); code == 0 {
		t.Fatalf("the judged go.mod still passes:\n%s\n%s", judged, out)
	}
}

// TestRealWorkspaceBin: when the judge installs the candidate's dependencies itself
// (dependencies_may_change; npm install --ignore-scripts, the node stack's Install
// entry), a workspace package's "bin" is linked into node_modules/.bin, ahead of the
// real runner on the PATH of `npm test`: a fake jest passes. package.json#.bin stays
// protected whether or not dependencies may change.
func TestRealWorkspaceBin(t *testing.T) {
	npm := tool(t, "npm")
	tool(t, "node")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json":                `{"name":"root","version":"1.0.0","private":true,"workspaces":["packages/*"],"scripts":{"test":"jest"}}`,
		"packages/tools/package.json": `{"name":"tools","version":"1.0.0","bin":{"jest":"./fake.js"}}`,
		"packages/tools/fake.js":      "#!/usr/bin/env node\nconsole.log('Tests: 12 passed, 12 total')\n",
	})
	if code, out := runIn(t, dir, nil, npm, "install", "--ignore-scripts", "--offline", "--no-audit", "--no-fund"); code != 0 {
		t.Fatalf("npm install: exit %d\n%s", code, out)
	}
	if code, out := runIn(t, dir, nil, npm, "test"); code != 0 || !strings.Contains(out, "12 passed") {
		t.Fatalf("the workspace's bin did not replace jest (exit %d):\n%s", code, out)
	}
	for _, may := range []bool{false, true} {
		if got := protectedBy([]string{"node"}, may, "packages/tools/package.json"); !strings.Contains(got, "package.json#.bin") {
			t.Errorf("dependencies_may_change %v: a workspace's package.json protected %q", may, got)
		}
	}
}
