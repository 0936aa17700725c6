package contract

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeTree creates files (name → content; a name ending in "/" is a directory) in a
// fresh temp dir and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// onPath is a lookPath that finds exactly the tools named.
func onPath(tools ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if slices.Contains(tools, name) {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
}

var allTools = onPath("go", "gofmt", "npm", "pnpm", "yarn", "python3", "ruff", "mypy", "cargo", "make")

// stackCommands lists "stack: command (reason)" of every generated stack criterion.
func stackCommands(v Verification) []string {
	var out []string
	for _, c := range v.Criteria {
		out = append(out, c.Stack+": "+c.Command+" | "+c.Description)
	}
	return out
}

// TestDetectWorkspaceStacks reads real workspaces of each stack from disk and checks
// the criteria generation derives from them, with why each is there.
func TestDetectWorkspaceStacks(t *testing.T) {
	gofmtCmd := DefaultStacks()[0].Commands[2].Command
	for _, tc := range []struct {
		name   string
		files  map[string]string
		stacks []string
		want   []string // stack: command | description
	}{
		{"go", map[string]string{"go.mod": "module example.com/x\n", "main.go": "package main\n"}, []string{"go"}, []string{
			"go: go test ./... | Unit tests pass (go.mod found)",
			"go: go vet ./... | go vet reports no problems (go.mod found)",
			"go: " + gofmtCmd + " | Go files are gofmt-formatted (go.mod found)",
		}},
		{"node with npm", map[string]string{"package.json": `{"scripts":{"test":"jest","lint":"eslint ."}}`, "package-lock.json": "{}"}, []string{"node"}, []string{
			"node: npm test | Unit tests pass (package.json has a test script)",
			"node: npm run lint | No lint errors (package.json has a lint script)",
		}},
		{"node with pnpm", map[string]string{"package.json": `{"scripts":{"test":"vitest run","typecheck":"tsc --noEmit"}}`, "pnpm-lock.yaml": ""}, []string{"node"}, []string{
			"node: pnpm test | Unit tests pass (package.json has a test script; pnpm-lock.yaml found)",
			"node: pnpm run typecheck | No type errors (package.json has a typecheck script; pnpm-lock.yaml found)",
		}},
		{"node with yarn", map[string]string{"package.json": `{"scripts":{"test":"mocha"}}`, "yarn.lock": ""}, []string{"node"}, []string{
			"node: yarn test | Unit tests pass (package.json has a test script; yarn.lock found)",
		}},
		{"node with npm's placeholder test script", map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1","lint":"eslint"}}`}, nil, nil},
		{"python with pyproject", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n\n[tool.ruff]\nline-length = 100\n", "app/": ""}, []string{"python"}, []string{
			"python: python3 -m pytest -q | Unit tests pass (pytest configured in pyproject.toml)",
			"python: ruff check . | ruff reports no problems (ruff configured in pyproject.toml)",
		}},
		{"python with setup.cfg and mypy.ini", map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n", "mypy.ini": "[mypy]\n"}, []string{"python"}, []string{
			"python: python3 -m pytest -q | Unit tests pass (pytest configured in setup.cfg)",
			"python: mypy . | mypy reports no type errors (mypy configured in mypy.ini)",
		}},
		{"python with tox.ini", map[string]string{"tox.ini": "[tox]\nenvlist = py312\n[testenv]\ncommands = pytest\n"}, []string{"python"}, []string{
			"python: python3 -m pytest -q | Unit tests pass (pytest configured in tox.ini)",
		}},
		{"python without pytest", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n[tool.ruff]\n"}, nil, nil},
		{"rust", map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n", "src/": ""}, []string{"rust"}, []string{
			"rust: cargo test | Unit tests pass (Cargo.toml found)",
		}},
		{"make", map[string]string{"Makefile": ".PHONY: test build\nCC := gcc\nbuild: main.o\n\t$(CC) -o app main.o\ntest: build # run the tests\n\t./app --self-test\n"}, []string{"make"}, []string{
			"make: make test | make test passes (Makefile has a test target)",
		}},
		{"make without a test target", map[string]string{"Makefile": "test := yes\ncheck: ;\n\ttest -f x\n"}, nil, nil},
		{"docs only", map[string]string{"README.md": "# Docs\n", "docs/": "", "docs/guide.md": "guide"}, nil, nil},
		{"monorepo", map[string]string{"go.mod": "module m\n", "package.json": `{"scripts":{"test":"node --test"}}`}, []string{"go", "node"}, []string{
			"go: go test ./... | Unit tests pass (go.mod found)",
			"go: go vet ./... | go vet reports no problems (go.mod found)",
			"go: " + gofmtCmd + " | Go files are gofmt-formatted (go.mod found)",
			"node: npm test | Unit tests pass (package.json has a test script)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			facts, err := DetectWorkspace(dir, allTools)
			if err != nil {
				t.Fatal(err)
			}
			v := GenerateForWorkspace("Fix the crash on empty input", "", nil, DefaultRules(), facts, genNow)
			if v.Type != VerifyVerifiable || v.Workspace != WorkspaceDetected || !slices.Equal(v.Stacks, tc.stacks) {
				t.Fatalf("facts %+v\ngot %+v", facts, v)
			}
			if got := stackCommands(v); !slices.Equal(got, tc.want) {
				t.Fatalf("facts %+v\ngot  %q\nwant %q", facts, got, tc.want)
			}
			c := Contract{Verification: v}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDetectWorkspaceFacts(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"package.json":   `{"name":"x","scripts":{"test":"jest","build":"tsc","empty":"  ","odd":3}}`,
		"GNUmakefile":    "all: test lint\ntest:\n\tgo test\nlint::\n\tgolint\nX ::= y\nY ?= z\n%.o: %.c\n\tcc\n",
		"Makefile":       "ignored: ;\n",
		"pyproject.toml": "[tool.mypy]\nstrict = true\n",
		"setup.cfg":      "[options]\ntests_require = pytest\n",
		"src/":           "",
	})
	facts, err := DetectWorkspace(dir, onPath("go", "cargo", "special-tool"), "special-tool")
	if err != nil {
		t.Fatal(err)
	}
	want := WorkspaceFacts{
		Files:          []string{"GNUmakefile", "Makefile", "package.json", "pyproject.toml", "setup.cfg", "src/"},
		Scripts:        []string{"build", "test"},
		ScriptCommands: map[string]string{"build": "tsc", "test": "jest"},
		Targets:        []string{"all", "lint", "test"},
		Configured:     map[string]string{"mypy": "pyproject.toml", "pytest": "setup.cfg"},
		Tools:          []string{"cargo", "go", "special-tool"},
	}
	if !reflect.DeepEqual(facts, want) {
		t.Fatalf("got  %+v\nwant %+v", facts, want)
	}
	// A tool the commands need but PATH lacks is named on the match, not dropped.
	m := MatchStacks(DefaultRules(), facts)
	if len(m) != 3 || m[0].Name != "node" || m[0].Commands[0].Command != "npm test" || !slices.Equal(m[0].Commands[0].Missing, []string{"npm"}) {
		t.Fatalf("matches %+v", m)
	}
	if !slices.Equal(m[0].Left, []string{"typecheck: no package.json script typecheck", "lint: no package.json script lint"}) {
		t.Fatalf("left %q", m[0].Left)
	}
	if m[0].Results == nil || m[0].Results.Command != "npm test -- --ci --json --outputFile="+ResultsFilePlaceholder || m[1].Name != "python" || m[2].Name != "make" {
		t.Fatalf("matches %+v", m)
	}
}

// TestDetectWorkspaceReadsSafely: only regular files are read, bounded; what cannot be
// read is a problem, not an error, and never blocks.
func TestDetectWorkspaceReadsSafely(t *testing.T) {
	outside := writeTree(t, map[string]string{"package.json": `{"scripts":{"test":"jest"}}`})
	dir := writeTree(t, map[string]string{
		"pyproject.toml": "[tool.pytest.ini_options]\n" + strings.Repeat("#", MaxManifestBytes),
		"setup.cfg":      "[tool:pytest]\n",
		"Makefile":       "test:\n\ttrue\n",
	})
	if err := os.Symlink(filepath.Join(outside, "package.json"), filepath.Join(dir, "package.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "tox.ini"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var facts WorkspaceFacts
	var err error
	go func() {
		defer close(done)
		facts, err = DetectWorkspace(dir, onPath())
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("DetectWorkspace blocked (on the FIFO?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(facts.Scripts) != 0 {
		t.Fatalf("read package.json through a symlink: %+v", facts)
	}
	if facts.Configured["pytest"] != "setup.cfg" || !slices.Contains(facts.Files, "package.json") || !slices.Contains(facts.Files, "tox.ini") {
		t.Fatalf("facts %+v", facts)
	}
	if len(facts.Problems) != 1 || !strings.Contains(facts.Problems[0], "pyproject.toml: larger than 256 KiB") {
		t.Fatalf("problems %q", facts.Problems)
	}

	bad := writeTree(t, map[string]string{"package.json": `{"scripts": {"test": "jest"`})
	facts, err = DetectWorkspace(bad, onPath())
	if err != nil || len(facts.Scripts) != 0 || len(facts.Problems) != 1 || !strings.Contains(facts.Problems[0], "package.json: not valid JSON") {
		t.Fatalf("%+v %v", facts, err)
	}
	if _, err := DetectWorkspace(filepath.Join(bad, "nope"), nil); err == nil {
		t.Fatal("a missing directory is not an error")
	}
}
