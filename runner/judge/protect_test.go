package judge

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// protectedBy says how the default rules protect rel for a task of stacks (with the
// dependency pins unless depsMayChange): "" when not at all, "whole", or the parts
// ("package.json#.devDependencies").
func protectedBy(stacks []string, depsMayChange bool, rel string) string {
	v := contract.Verification{Stacks: stacks, DependenciesMayChange: depsMayChange}
	rules := ParseRules(models.DefaultRules().ProtectedFor(v))
	whole, parts := classify(rules, rel)
	if whole {
		return "whole"
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.Glob+"#"+p.Part)
	}
	return strings.Join(out, " ")
}

// hostileFiles are, per stack, files a hostile worker adds or edits to pass without
// fixing anything, each with the part that must be protected ("" for the whole file).
// Every one was let through before these rules (see the list of verified
// cheats); deleting the rule that covers one fails this test.
var hostileFiles = []struct {
	stack, path, part, why string
}{
	// Python: modules that replace the runner on sys.path, start-up hooks, conftest
	// and configuration anywhere.
	{"python", "pytest.py", "", "shadows pytest for python3 -m pytest (cwd first on sys.path)"},
	{"python", "pytest/__init__.py", "", "shadows pytest as a package"},
	{"python", "_pytest/__init__.py", "", "shadows pytest's implementation"},
	{"python", "pluggy/__init__.py", "", "shadows pytest's plugin manager"},
	{"python", "py.py", "", "shadows the py shim pytest imports"},
	{"python", "iniconfig.py", "", "shadows pytest's ini reader"},
	{"python", "sitecustomize.py", "", "a start-up hook"},
	{"python", "src/usercustomize.py", "", "a start-up hook"},
	{"python", "lib/site-packages/evil.pth", "", "a .pth start-up hook"},
	{"python", "pkg/sub/conftest.py", "", "a conftest in a subdirectory deselects or rewrites tests"},
	{"python", "pkg/pytest.ini", "", "pytest configuration below the root"},
	{"python", "pytest.toml", "", "pytest 9 configuration"},
	{"python", "pkg/tests/helpers.py", "", "test helpers in a nested tests directory"},
	// Node: package manager and runner configuration, the runners' default names.
	{"node", ".npmrc", "", "script-shell and node-options for every npm script"},
	{"node", "packages/a/.npmrc", "", "a workspace's .npmrc"},
	{"node", ".yarnrc.yml", "", "yarnPath replaces yarn"},
	{"node", ".yarnrc", "", "yarn classic configuration"},
	{"node", ".yarn/releases/yarn-4.0.0.cjs", "", "the yarn release .yarnrc.yml runs"},
	{"node", ".pnpmfile.cjs", "", "pnpm's hooks rewrite packages"},
	{"node", "src/calc-test.js", "", "node --test runs *-test.js"},
	{"node", "src/calc_test.mjs", "", "node --test runs *_test.mjs"},
	{"node", "src/test-calc.cjs", "", "node --test runs test-*.cjs"},
	{"node", "lib/test.js", "", "node --test runs test.js"},
	{"node", "lib/test/deep/x.js", "", "node --test runs every file below a test directory"},
	{"node", "src/__tests__/calc.js", "", "jest runs __tests__"},
	{"node", "src/__mocks__/chai.js", "", "jest's __mocks__ replace modules"},
	{"node", "babel.config.js", "", "a transform rewrites the tests"},
	{"node", "vite.config.ts", "", "vitest reads vite's configuration"},
	{"node", "package.json", ".mocha", "mocha's configuration in package.json"},
	{"node", "packages/tools/package.json", ".bin", `a workspace's "bin": {"jest": "./fake.js"} on the scripts' PATH`},
	// Go: what swaps the code the tests import.
	{"go", "go.work", "", "a workspace swaps modules"},
	{"go", "go.work.sum", "", "a workspace's sums"},
	{"go", "vendor/github.com/stretchr/testify/assert/assertions.go", "", "vendored assertions"},
	{"go", "go.mod", "replace", "replace => ./fake"},
	{"go", "go.mod", "require", "a dependency's version"},
	{"go", "pkg/testdata/golden.txt", "", "test data below the root"},
	// Rust: cargo's configuration replaces what cargo test runs.
	{"rust", ".cargo/config.toml", "", "[target] runner, [alias] test"},
	{"rust", "rust-toolchain.toml", "", "the compiler"},
	// Dependency pins of every stack.
	{"node", "package-lock.json", "", `"resolved": "file:../fake-chai"`},
	{"node", "yarn.lock", "", "a path entry"},
	{"node", "pnpm-lock.yaml", "", "link: entries"},
	{"node", "package.json", ".devDependencies", `"chai": "file:./fake-chai"`},
	{"python", "requirements.txt", "", "-e ./fake_pytest"},
	{"python", "pyproject.toml", "[project.dependencies]", "a dependency swapped"},
	{"rust", "Cargo.toml", "[patch]", "[patch.crates-io] with a path"},
}

// TestHostileFilesProtected: every hostile file of every stack is protected by the
// default rules, whole or in the part named.
func TestHostileFilesProtected(t *testing.T) {
	for _, h := range hostileFiles {
		got := protectedBy([]string{h.stack}, false, h.path)
		if h.part == "" && got != "whole" || h.part != "" && !strings.Contains(" "+got+" ", "#"+h.part+" ") {
			t.Errorf("%s %s (%s): protected %q, want %s", h.stack, h.path, h.why, got, map[bool]string{true: "whole", false: "#" + h.part}[h.part == ""])
		}
	}
}

// TestDependencyPinsFollowTheContract: with dependencies_may_change the pins are not
// protected (the judge installs the candidate's dependencies instead, InstallFor
// says how) while the runner's configuration still is; without it nothing is
// installed.
func TestDependencyPinsFollowTheContract(t *testing.T) {
	for _, tc := range []struct{ stack, path, part string }{
		{"node", "package-lock.json", ""}, {"node", "package.json", ".devDependencies"},
		{"go", "go.mod", "replace"}, {"go", "vendor/x/y.go", ""}, {"go", "go.work", ""},
		{"python", "requirements.txt", ""}, {"rust", "Cargo.lock", ""},
	} {
		if got := protectedBy([]string{tc.stack}, true, tc.path); strings.Contains(" "+got+" ", "#"+tc.part+" ") || (tc.part == "" && got == "whole") {
			t.Errorf("%s with dependencies_may_change: still protected (%s)", tc.path, got)
		}
	}
	for _, p := range []string{".npmrc", "src/a-test.js"} {
		if protectedBy([]string{"node"}, true, p) != "whole" {
			t.Errorf("%s unprotected by dependencies_may_change", p)
		}
	}
	rules := models.DefaultRules()
	facts := contract.WorkspaceFacts{Files: []string{"package.json", "package-lock.json", "go.mod", "requirements.txt"}}
	v := contract.Verification{Stacks: []string{"go", "node", "python"}, DependenciesMayChange: true}
	var cmds []string
	for _, in := range rules.InstallFor(v, facts) {
		cmds = append(cmds, in.Command)
	}
	want := "go mod download|npm ci --ignore-scripts --no-audit --no-fund|python3 -m pip install --no-input --disable-pip-version-check --only-binary=:all: --target {install_dir} -r requirements.txt"
	if strings.Join(cmds, "|") != want {
		t.Errorf("install commands:\n got %s\nwant %s", strings.Join(cmds, "|"), want)
	}
	v.DependenciesMayChange = false
	if got := rules.InstallFor(v, facts); len(got) != 0 {
		t.Errorf("install commands with the pins protected: %v", got)
	}
}

// TestFilesRunRulesMatch: the anchored globs fileparts.FilesRun returns match their
// own path and no other of the same name.
func TestFilesRunRulesMatch(t *testing.T) {
	r := ParseRules([]string{"/run.sh", `/we\[ir\]d.sh`, "/scripts/x.sh"})
	for rel, want := range map[string]bool{"run.sh": true, "sub/run.sh": false, "we[ir]d.sh": true, "wei.sh": false,
		"scripts/x.sh": true, "a/scripts/x.sh": false} {
		if whole, _ := classify(r, rel); whole != want {
			t.Errorf("%s protected %v, want %v", rel, whole, want)
		}
	}
}
