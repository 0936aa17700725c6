package fileparts

import (
	"slices"
	"strings"
	"testing"
)

// fsOf is a base revision for FilesRun: path -> content.
func fsOf(files map[string]string) func(string) ([]byte, bool) {
	return func(rel string) ([]byte, bool) {
		s, ok := files[rel]
		if !ok {
			return nil, false
		}
		return []byte(s), true
	}
}

func wantFiles(t *testing.T, name string, got []string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %s not protected; FilesRun gave %v", name, w, got)
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%s: %s protected, but nothing runs it; FilesRun gave %v", name, n, got)
		}
	}
}

// TestFilesRunRecipesAndScripts: the files a protected Makefile recipe or
// package.json script runs are protected, transitively into the shell scripts those
// run and source, with make's variables and npm-run-all expanded.
func TestFilesRunRecipesAndScripts(t *testing.T) {
	base := map[string]string{
		"Makefile": "PY = python3\nTESTER = tools/tester.py\n.PHONY: test check\n" +
			"test: check\n\t@./scripts/run-tests.sh\n\t$(PY) $(TESTER) --fast\n" +
			"check:\n\t-sh scripts/check.sh 2>&1\n" +
			"build:\n\t./scripts/build.sh\n",
		"scripts/run-tests.sh": "#!/bin/sh\nset -e\nSCRIPT_DIR=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n. \"$SCRIPT_DIR/lib.sh\"\nbash tools/inner.sh \"$@\"\n",
		"scripts/lib.sh":       "export X=1\n",
		"tools/inner.sh":       "cd tools && python3 run.py\n",
		"tools/run.py":         "print('ok')\n",
		"tools/tester.py":      "print('ok')\n",
		"scripts/check.sh":     "true\n",
		"scripts/build.sh":     "true\n",
		"package.json": `{"scripts": {"test": "run-s lint unit", "lint": "eslint src/app.js", ` +
			`"unit": "node scripts/test.js && sh ./t.sh", "pretest": "node scripts/pre.js", "deploy": "./deploy.sh"}}`,
		"scripts/test.js": "require('./helpers')\n",
		"t.sh":            "exec ./bin/real-test\n",
		"bin/real-test":   "#!/usr/bin/env bash\n./bin/deeper\n",
		"bin/deeper":      "#!/bin/sh\ntrue\n",
		"src/app.js":      "module.exports = 1\n",
	}
	got := FilesRun([]string{"make test", "npm test"}, fsOf(base))
	wantFiles(t, "recipes", got,
		[]string{"/scripts/run-tests.sh", "/scripts/lib.sh", "/tools/inner.sh", "/tools/run.py", "/tools/tester.py",
			"/scripts/check.sh", "/scripts/test.js", "/scripts/pre.js", "/t.sh", "/bin/real-test", "/bin/deeper"},
		[]string{"/scripts/build.sh", "/deploy.sh", "/src/app.js", "/run.py"})
}

// TestFilesRunHostileShell: quoting tricks, substitutions, subshells, cd, eval,
// bash -c, heredocs and stdin scripts do not hide what runs; paths outside the
// workspace and files that are only arguments are not protected.
func TestFilesRunHostileShell(t *testing.T) {
	base := map[string]string{"scripts/x.sh": "true\n", "a/b.sh": "true\n", "gen.sh": "true\n"}
	for name, tc := range map[string]struct {
		cmd       string
		want, not []string
	}{
		"split quotes":      {`"./scr"'ipts/x.sh'`, []string{"/scripts/x.sh"}, nil},
		"escaped":           {`./scripts/x\.sh`, []string{"/scripts/x.sh"}, nil},
		"bash -c":           {`bash -c "cd a && ./b.sh"`, []string{"/a/b.sh"}, []string{"/b.sh"}},
		"sh -ec":            {`sh -ec './c.sh'`, []string{"/c.sh"}, nil},
		"command subst":     {`echo "$(./gen.sh)" > out`, []string{"/gen.sh"}, nil},
		"backquotes":        {"v=`./gen.sh`", []string{"/gen.sh"}, nil},
		"cd chain":          {`cd a && ./b.sh`, []string{"/a/b.sh"}, []string{"/b.sh"}},
		"subshell cd":       {`(cd a; ./b.sh); ./c.sh`, []string{"/a/b.sh", "/c.sh"}, []string{"/a/c.sh"}},
		"variable":          {`D=scripts; "$D/x.sh"`, []string{"/scripts/x.sh"}, nil},
		"eval":              {`eval "./scripts/x.sh --fast"`, []string{"/scripts/x.sh"}, nil},
		"wrappers":          {`env CI=1 timeout 60 nice ./scripts/x.sh`, []string{"/scripts/x.sh"}, nil},
		"stdin script":      {`sh < scripts/x.sh`, []string{"/scripts/x.sh"}, nil},
		"heredoc":           {"bash <<EOF\n./gen.sh\nEOF", []string{"/gen.sh"}, nil},
		"source":            {`source ./env.sh && . lib/more.sh`, []string{"/env.sh", "/lib/more.sh"}, nil},
		"node preload":      {`node --require ./hook.js --import=./esm-hook.mjs --test`, []string{"/hook.js", "/esm-hook.mjs"}, nil},
		"config files":      {`npx jest --config=jest.ci.js && mocha -r ./setup.js && pytest -c ci.ini`, []string{"/jest.ci.js", "/setup.js", "/ci.ini"}, nil},
		"python module":     {`python3 -m tools.run`, []string{"/tools/run.py", "/tools/run/__main__.py"}, nil},
		"outside":           {`/usr/bin/env ../up.sh; ~/x.sh; /tmp/y.sh`, nil, []string{"/up.sh", "/x.sh", "/tmp/y.sh"}},
		"compiler args":     {`gcc -c main.c && eslint src/app.js && go test ./...`, nil, []string{"/main.c", "/src/app.js", "/..."}},
		"python code":       {`python3 -c "import x" && node -e "1"`, nil, []string{"/import x", "/1"}},
		"unparseable":       {"./gen.sh; if then fi ((", []string{"/gen.sh"}, nil},
		"glob chars":        {`./we[ir]d*.sh`, []string{`/we\[ir\]d\*.sh`}, nil},
		"dirname of script": {`cd "$(dirname scripts/x.sh)" && ./y.sh`, []string{"/scripts/y.sh"}, nil},
	} {
		wantFiles(t, name, FilesRun([]string{tc.cmd}, fsOf(base)), tc.want, tc.not)
	}
}

// TestFilesRunComputedCommand: after a command word FilesRun cannot resolve (a make
// variable defined nowhere, $PYTHON), arguments that are scripts at base are
// protected; arguments that are not files are not.
func TestFilesRunComputedCommand(t *testing.T) {
	base := map[string]string{"Makefile": "test:\n\t$(PYTHON) tools/run.py data.txt\n", "tools/run.py": "x\n", "data.txt": "1\n"}
	got := FilesRun([]string{"make test"}, fsOf(base))
	wantFiles(t, "computed", got, []string{"/tools/run.py"}, []string{"/data.txt"})
}

// TestFilesRunBounded: scripts that run themselves and each other end; a chain
// deeper than maxRunDepth is followed that far.
func TestFilesRunBounded(t *testing.T) {
	base := map[string]string{"a.sh": "./b.sh; ./a.sh\n", "b.sh": "./a.sh\n"}
	for i := 0; i < 20; i++ {
		base["c"+string(rune('a'+i))+".sh"] = "./c" + string(rune('a'+i+1)) + ".sh\n"
	}
	got := FilesRun([]string{"./a.sh", "./ca.sh"}, fsOf(base))
	wantFiles(t, "cycle", got, []string{"/a.sh", "/b.sh", "/ca.sh", "/cf.sh"}, []string{"/cz.sh"})
	if len(got) > 20 {
		t.Fatalf("a chain of 20 scripts was followed past its bound: %d files", len(got))
	}
}

// TestFilesRunNothingRuns: commands that run no workspace file protect nothing.
func TestFilesRunNothingRuns(t *testing.T) {
	got := FilesRun([]string{"go test ./...", "python3 -m pytest -q", "npm test"}, fsOf(map[string]string{
		"package.json": `{"scripts":{"test":"node --test"}}`}))
	for _, g := range got {
		if !strings.HasPrefix(g, "/pytest") {
			t.Errorf("protected %s", g)
		}
	}
}

// TestFilesRunMakeIncludesAndPlugins: a makefile a protected include line names is
// protected whole and its recipes read; a pytest -p plugin module is protected.
func TestFilesRunMakeIncludesAndPlugins(t *testing.T) {
	base := map[string]string{
		"Makefile":    "MK = mk\ninclude $(MK)/test.mk\n",
		"mk/test.mk":  "test:\n\tpytest -p tools.plug -p no:cacheprovider\n\t./mk/run.sh\n",
		"mk/run.sh":   "true\n",
		"tools/x.txt": "",
	}
	got := FilesRun([]string{"make test"}, fsOf(base))
	wantFiles(t, "include", got, []string{"/mk/test.mk", "/mk/run.sh", "/tools/plug.py", "/tools/plug/__init__.py"},
		[]string{"/no:cacheprovider.py"})
}

// TestFilesRunLeavesCodeUnderTest: a recipe that runs the program being written
// (python3 main.py < in.txt | diff, node src/server.js, python3 -m mypkg, a binary
// the recipe builds) does not protect it: the worker is there to change it. Tooling
// the same recipe runs is protected.
func TestFilesRunLeavesCodeUnderTest(t *testing.T) {
	base := map[string]string{
		"Makefile": "test: app\n\tpython3 main.py < in.txt | diff - want.txt\n\tnode src/server.js & sleep 1; node tools/probe.js\n" +
			"\tpython3 -m mypkg --selftest\n\t./app --check\n\tpython3 run_tests.py\napp:\n\tcc -o app app.c\n",
		"main.py": "print(1)\n", "src/server.js": "x\n", "mypkg/__main__.py": "x\n", "app.c": "int main(){}\n",
		"tools/probe.js": "x\n", "run_tests.py": "x\n",
	}
	got := FilesRun([]string{"make test"}, fsOf(base))
	wantFiles(t, "code under test", got, []string{"/tools/probe.js", "/run_tests.py"},
		[]string{"/main.py", "/src/server.js", "/mypkg/__main__.py", "/app", "/app.c", "/in.txt", "/want.txt"})
}
