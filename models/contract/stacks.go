package contract

import (
	"slices"
	"strings"
)

// Stacks: the kinds of workspace contract generation knows. A stack is detected from
// the workspace's top-level files (go.mod, a package.json test script, a Makefile
// target, …), and brings the commands that check work in it, each with the
// conditions under which it applies. Each stack also names its protected paths (the
// tests and test configuration a worker must not weaken, which the judge's view
// restores from the base revision) and how to read its test runner's structured
// results (for the test floor).

// Stack is one kind of workspace in the project rules.
type Stack struct {
	// Name identifies the stack (go, node, python, …) in criteria and events.
	Name string `json:"name" yaml:"name"`
	// Detect lists conditions of which any one makes a workspace this stack.
	Detect []Condition `json:"detect" yaml:"detect"`
	// Commands check work in the stack. For each activity the first command whose
	// conditions all hold is used, so variants (pnpm, yarn, npm) are listed most
	// specific first.
	Commands []StackCommand `json:"commands" yaml:"commands"`
	// Protect lists globs of the paths a worker must not change to pass: test files,
	// test data and test configuration. A pattern without a slash matches a base name
	// anywhere (*_test.go); "**" matches any number of directories (tests/**).
	// "file#part" protects a part of the file: package.json#scripts (the scripts the
	// contract runs), Makefile#targets (the targets it runs), pyproject.toml#[tool.pytest]
	// (a TOML table and those below it), setup.cfg#[tool:pytest] (an INI section),
	// go.mod#replace (a go.mod directive's lines). The files that the contract's
	// scripts and recipes run are protected besides (fileparts.FilesRun).
	Protect []string `json:"protect,omitempty" yaml:"protect,omitempty"`
	// Pins lists protect patterns (Protect's syntax) of the files that pin the
	// dependencies the tests import: lockfiles, dependency lists, go.mod's require
	// and replace directives, vendored trees. A worker who edits them swaps code the
	// tests run ("file:../fake-chai" in a lockfile, a replace => ./fake), so they are
	// protected like Protect unless the contract lets dependencies change
	// (Verification.DependenciesMayChange); then the judge installs the candidate's
	// dependencies itself (Install) and the report lists the ones that changed.
	Pins []string `json:"pins,omitempty" yaml:"pins,omitempty"`
	// Install says how the judge installs the stack's dependencies from the
	// candidate's manifests when the contract lets them change: the first entry whose
	// conditions hold applies. Commands run no package's own scripts
	// (--ignore-scripts, binary wheels only), and install where InstallDirPlaceholder
	// says when the stack has no project-local dependency tree.
	Install []InstallCommand `json:"install,omitempty" yaml:"install,omitempty"`
	// Results says how to read the test runner's structured results: the first entry
	// whose conditions hold applies.
	Results []TestResults `json:"results,omitempty" yaml:"results,omitempty"`
	// JudgeEnv are KEY=VALUE variables every judged run gets (verify commands,
	// criteria, the floor's base run, held-out tests, deferred checks): the stack's
	// user configuration switched off or pointed at judge-owned files. A value may
	// name the judged run's own places: {home}, {tmp}, {etc} (read-only files the
	// judge makes empty), {gocache}, {gomodcache}, {pysite} (see runner/judge.Env).
	// PATH, HOME and TMPDIR are the judge's and cannot be set here.
	JudgeEnv []string `json:"judge_env,omitempty" yaml:"judge_env,omitempty"`
	// ConfigSources documents where the stack's tools read configuration a worker
	// could write (files, variables) and how the judge's environment switches each off.
	ConfigSources []string `json:"config_sources,omitempty" yaml:"config_sources,omitempty"`
	// JudgeConnect are the TCP ports a judged run of any stack may connect to; none
	// by default (the judge prepares dependencies itself, before the worker runs).
	JudgeConnect []int `json:"judge_connect,omitempty" yaml:"judge_connect,omitempty"`
}

// StackCommand is one command of a stack.
type StackCommand struct {
	// Activity is what the command checks (unit-test, vet, format, lint, typecheck).
	Activity string `json:"activity" yaml:"activity"`
	// Command runs with /bin/sh in the task workspace and must exit 0.
	Command string `json:"command" yaml:"command"`
	// Description is the criterion's description ("Unit tests pass"); generation adds
	// why the command is there ("go.mod found").
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// When lists conditions that must all hold for the command to apply (besides the
	// stack's detection): a package.json script, a lockfile, a configured tool.
	When []Condition `json:"when,omitempty" yaml:"when,omitempty"`
	// Tools are the programs the command runs; they must be on PATH where it runs.
	// They do not decide whether the command applies: a missing tool is reported
	// before delegation rather than silently leaving the check out.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
}

// TestResults says how a stack's test runner reports structured results.
type TestResults struct {
	// Format is the results format: go-test-json, junit-xml, tap or cargo-test.
	Format string `json:"format" yaml:"format"`
	// Command is the variant of the test command that produces the results, on its
	// standard output, or in the file named by ResultsFilePlaceholder.
	Command string `json:"command" yaml:"command"`
	// When lists conditions that must all hold for this entry to apply.
	When []Condition `json:"when,omitempty" yaml:"when,omitempty"`
	// Canary names the judge-made canary pair this runner's judged runs carry (a test
	// that must fail and one that must pass, written next to the tests under fresh
	// names): one of CanaryKinds. Empty: the runner carries none, and the attempt's
	// judge report says the run's honesty was not checked.
	Canary string `json:"canary,omitempty" yaml:"canary,omitempty"`
}

// The canary kinds a TestResults entry may name: which test file the judge writes.
const (
	CanaryGo       = "go"        // zz_countersign_canary_<nonce>_test.go in a tested package
	CanaryPytest   = "pytest"    // test_countersign_canary_<nonce>.py where pytest collects
	CanaryNodeTest = "node-test" // countersign-canary-<nonce>.test.js (.cjs/.mjs) for node --test
	CanaryJest     = "jest"      // countersign-canary-<nonce>.test.js for jest
	CanaryVitest   = "vitest"    // countersign-canary-<nonce>.test.js (ES module) for vitest
	CanaryMocha    = "mocha"     // countersign-canary-<nonce>.spec.js for mocha
)

// CanaryKinds are the kinds TestResults.Canary may name.
var CanaryKinds = []string{CanaryGo, CanaryPytest, CanaryNodeTest, CanaryJest, CanaryVitest, CanaryMocha}

// InstallCommand is one way of installing a stack's dependencies.
type InstallCommand struct {
	// Command runs with /bin/sh in the judge's view of the candidate and must exit 0.
	Command string `json:"command" yaml:"command"`
	// When lists conditions that must all hold for this entry to apply (a lockfile).
	When []Condition `json:"when,omitempty" yaml:"when,omitempty"`
	// Tools are the programs the command runs.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
}

// InstallDirPlaceholder in an Install command is replaced by a judge-owned directory
// that the judged run then imports from (Python's --target, put on PYTHONPATH).
const InstallDirPlaceholder = "{install_dir}"

// ResultsFilePlaceholder in a TestResults command is replaced by the path of the file
// the results are to be written to.
const ResultsFilePlaceholder = "{results_file}"

// The test result formats a stack may name.
const (
	ResultsGoTestJSON = "go-test-json" // go test -json: one JSON event per line
	ResultsJUnitXML   = "junit-xml"    // JUnit XML (pytest --junitxml, many others)
	ResultsTAP        = "tap"          // Test Anything Protocol
	ResultsCargoTest  = "cargo-test"   // libtest's "test name ... ok" lines
	ResultsJestJSON   = "jest-json"    // jest --json (and vitest's json reporter)
)

// ResultFormats are the formats TestResults.Format may name.
var ResultFormats = []string{ResultsGoTestJSON, ResultsJUnitXML, ResultsTAP, ResultsCargoTest, ResultsJestJSON}

// Condition is one fact about a workspace; exactly one field is set.
type Condition struct {
	// File: a top-level file or directory with this name, or a glob of names
	// (playwright.config.*); a trailing slash asks for a directory.
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	// Script: package.json defines this script (npm's "no test specified"
	// placeholder does not count as a test script).
	Script string `json:"script,omitempty" yaml:"script,omitempty"`
	// Target: the Makefile has this target.
	Target string `json:"target,omitempty" yaml:"target,omitempty"`
	// Config: this tool is configured in the workspace (see ConfigTools).
	Config string `json:"config,omitempty" yaml:"config,omitempty"`
	// Tool: this program is on PATH.
	Tool string `json:"tool,omitempty" yaml:"tool,omitempty"`
	// ScriptRuns: a package.json script's command matches a regular expression,
	// written "script: regexp" ("test: \\bjest\\b"): which test runner the script runs.
	ScriptRuns string `json:"script_runs,omitempty" yaml:"script_runs,omitempty"`
}

// DefaultStacks returns the stacks of the default rules:
//
//	go      go.mod                      unit-test go test ./...; vet go vet ./...; format gofmt -l
//	node    a package.json test script  unit-test npm test (pnpm test, yarn test by lockfile);
//	                                    typecheck, lint: the script of that name, when defined
//	python  pytest configured           unit-test python3 -m pytest -q; lint ruff check .
//	                                    and typecheck mypy ., when configured
//	rust    Cargo.toml                  unit-test cargo test
//	make    a Makefile test target      unit-test make test
//
// A workspace that matches none (documentation only, or a fresh directory) gets no
// commands; a monorepo gets the commands of every stack it matches.
//
// Structured results, and the judge's canary pair with them: go (go test -json),
// python (pytest's JUnit XML), node by the runner the test script runs (node --test,
// jest, vitest, mocha; any other runner: none). rust's cargo test output carries no
// canary, and the make stack has no structured results at all: runs of those are not
// checked for forged results, and the attempt's judge report says so.
func DefaultStacks() []Stack {
	return withJudgeEnv([]Stack{
		{
			Name:   "go",
			Detect: []Condition{{File: "go.mod"}},
			Commands: []StackCommand{
				{Activity: "unit-test", Command: "go test ./...", Description: "Unit tests pass", Tools: []string{"go"}},
				{Activity: "vet", Command: "go vet ./...", Description: "go vet reports no problems", Tools: []string{"go"}},
				{Activity: "format", Command: `files=$(gofmt -l .) || exit 2; test -z "$files" || { echo "not gofmt-formatted:"; echo "$files"; exit 1; }`,
					Description: "Go files are gofmt-formatted", Tools: []string{"gofmt"}},
			},
			Protect: slices.Clone(goProtect),
			Pins:    slices.Clone(goPins),
			Install: []InstallCommand{
				{Command: "go mod vendor", When: []Condition{{File: "vendor/"}}, Tools: []string{"go"}},
				{Command: "go mod download", Tools: []string{"go"}},
			},
			Results: []TestResults{{Format: ResultsGoTestJSON, Command: "go test -json ./...", Canary: CanaryGo}},
		},
		{
			Name:     "node",
			Detect:   []Condition{{Script: "test"}},
			Commands: nodeCommands(),
			Protect:  slices.Clone(nodeProtect),
			Pins:     slices.Clone(nodePins),
			Install:  nodeInstall(),
			Results:  nodeResults(),
		},
		{
			Name:   "python",
			Detect: []Condition{{Config: "pytest"}},
			Commands: []StackCommand{
				{Activity: "unit-test", Command: "python3 -m pytest -q", Description: "Unit tests pass", Tools: []string{"python3"}},
				{Activity: "lint", Command: "ruff check .", Description: "ruff reports no problems", When: []Condition{{Config: "ruff"}}, Tools: []string{"ruff"}},
				{Activity: "typecheck", Command: "mypy .", Description: "mypy reports no type errors", When: []Condition{{Config: "mypy"}}, Tools: []string{"mypy"}},
			},
			Protect: slices.Clone(pythonProtect),
			Pins:    slices.Clone(pythonPins),
			Install: []InstallCommand{{Command: "python3 -m pip install --no-input --disable-pip-version-check --only-binary=:all: --target " +
				InstallDirPlaceholder + " -r requirements.txt", When: []Condition{{File: "requirements.txt"}}, Tools: []string{"python3"}}},
			Results: []TestResults{{Format: ResultsJUnitXML, Command: "python3 -m pytest -q --junitxml=" + ResultsFilePlaceholder, Canary: CanaryPytest}},
		},
		{
			Name:     "rust",
			Detect:   []Condition{{File: "Cargo.toml"}},
			Commands: []StackCommand{{Activity: "unit-test", Command: "cargo test", Description: "Unit tests pass", Tools: []string{"cargo"}}},
			Protect:  slices.Clone(rustProtect),
			Pins:     slices.Clone(rustPins),
			Install: []InstallCommand{
				{Command: "cargo fetch --locked", When: []Condition{{File: "Cargo.lock"}}, Tools: []string{"cargo"}},
				{Command: "cargo fetch", Tools: []string{"cargo"}},
			},
			Results: []TestResults{{Format: ResultsCargoTest, Command: "cargo test"}},
		},
		{
			Name:     "make",
			Detect:   []Condition{{Target: "test"}},
			Commands: []StackCommand{{Activity: "unit-test", Command: "make test", Description: "make test passes", Tools: []string{"make"}}},
			Protect:  []string{"Makefile#targets", "GNUmakefile#targets", "makefile#targets"},
		},
	})
}

// The default stacks' protected paths and dependency pins. Each list covers, for its
// stack: the test files by the test runners' default names, the files that configure
// or replace the test runner at any depth (a project .npmrc's script-shell, a conftest.py
// in a subdirectory, a pytest.py at the root that `python3 -m pytest` imports instead
// of pytest), and, in the Pins lists, what swaps the code the tests import.
// DefaultStacks clones them: callers edit the rules they are given.
var (
	goProtect = []string{"*_test.go", "**/testdata/**", ".golangci.*",
		// toolchain settings of go.mod: runtime behaviour the tests see (godebug); the
		// go and toolchain lines choose the compiler and are pins.
		"go.mod#godebug"}
	goPins = []string{"go.mod#require", "go.mod#replace", "go.mod#exclude", "go.mod#go", "go.mod#toolchain",
		"go.sum", "go.work", "go.work.sum", "**/vendor/**"}

	nodeProtect = []string{
		// Test files by the runners' default names: node --test (Node 20: every .js,
		// .cjs, .mjs below a directory named test, and test.*, test-*, *.test.*,
		// *-test.*, *_test.*; the globs take any extension, for the runners that load
		// TypeScript), jest (__tests__, *.test.*, *.spec.*, with its __mocks__ that
		// replace modules), vitest and mocha (test/).
		"**/test/**", "**/tests/**", "**/__tests__/**", "**/__mocks__/**", "test.*", "test-*",
		"*.test.*", "*-test.*", "*_test.*", "*.spec.*",
		// The runners' configuration, and the package manager's: a project .npmrc sets
		// script-shell and node-options for every script, .yarnrc* and .pnpmfile.cjs
		// do the same for yarn and pnpm, and yarn's own release and plugins (yarnPath
		// in .yarnrc.yml) are the package manager itself.
		".npmrc", ".yarnrc*", ".yarn/releases/**", ".yarn/plugins/**", ".pnpmfile.*", "pnpm-workspace.yaml", "bunfig.toml",
		"jest.config.*", "jest.setup.*", "setupTests.*", "vitest.config.*", "vitest.workspace.*", "vitest.setup.*",
		"vite.config.*", ".mocharc*", "ava.config.*", ".taprc", "karma.conf.*", "playwright.config.*",
		"cypress.config.*", "babel.config.*", ".babelrc*", ".swcrc", ".c8rc*", ".nycrc*",
		".eslintrc*", "eslint.config.*",
		// A package's bin is linked onto the PATH of npm scripts when npm installs a
		// workspace ("bin": {"jest": "./fake.js"}), so it replaces the runner once the
		// judge installs the candidate's dependencies.
		"package.json#.bin", "package.json#.directories",
		"package.json#scripts", "package.json#.jest", "package.json#.mocha", "package.json#.ava",
		"package.json#.babel", "package.json#.c8", "package.json#.nyc", "package.json#.tap"}
	// Lockfiles are pinned whole, not entry by entry (a part for the entries that
	// resolve to a path): with dependencies fixed any lockfile edit is a dependency
	// change (a re-pointed "resolved", a git URL, an integrity), and yarn.lock and
	// pnpm-lock.yaml have no parser here that reads them as their managers do. When
	// dependencies may change, the report marks entries that resolve to a path.
	nodePins = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
		"bun.lock", "bun.lockb", ".yarn/cache/**", ".yarn/patches/**", ".pnp.*",
		"package.json#.dependencies", "package.json#.devDependencies", "package.json#.optionalDependencies",
		"package.json#.peerDependencies", "package.json#.bundleDependencies", "package.json#.bundledDependencies",
		"package.json#.overrides", "package.json#.resolutions", "package.json#.pnpm",
		"package.json#.workspaces", "package.json#.packageManager",
		// A dependency tree in the repository (one the base does not ignore) is the
		// code the tests import, as Go's vendor/ is.
		"**/node_modules/**"}

	pythonProtect = []string{"**/tests/**", "**/test/**", "test_*.py", "*_test.py",
		// pytest's configuration, wherever pytest may find it, and its plugins.
		"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini",
		"pyproject.toml#[tool.pytest]", "pyproject.toml#[project.entry-points.pytest11]", "setup.cfg#[tool:pytest]",
		// Python's start-up hooks, and the modules that `python3 -m pytest` imports
		// before any test, which a file of the same name at the root (first on
		// sys.path) replaces.
		"sitecustomize.py", "usercustomize.py", "*.pth", "pytest.py", "_pytest.py", "py.py", "pluggy.py",
		"iniconfig.py", "attr.py", "packaging.py", "exceptiongroup.py", "tomli.py",
		"pytest/**", "_pytest/**", "py/**", "pluggy/**", "iniconfig/**", "attr/**", "attrs/**",
		"packaging/**", "exceptiongroup/**", "tomli/**", "_distutils_hack/**",
		"ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini", "pyproject.toml#[tool.ruff]", "pyproject.toml#[tool.mypy]"}
	pythonPins = []string{"requirements*.txt", "constraints*.txt", "Pipfile", "Pipfile.lock", "poetry.lock",
		"uv.lock", "pdm.lock", "pylock.toml", "pylock.*.toml",
		"pyproject.toml#[project.dependencies]", "pyproject.toml#[project.optional-dependencies]",
		"pyproject.toml#[dependency-groups]", "pyproject.toml#[tool.poetry.dependencies]",
		"pyproject.toml#[tool.poetry.group]", "pyproject.toml#[tool.uv]", "pyproject.toml#[tool.pdm]"}

	rustProtect = []string{"**/tests/**", "**/benches/**",
		// cargo's configuration: [target.*] runner and [alias] test replace what
		// `cargo test` runs; the toolchain file picks the compiler.
		"**/.cargo/config", "**/.cargo/config.toml", "rust-toolchain", "rust-toolchain.toml"}
	rustPins = []string{"Cargo.lock", "Cargo.toml#[dependencies]", "Cargo.toml#[dev-dependencies]",
		"Cargo.toml#[build-dependencies]", "Cargo.toml#[target]", "Cargo.toml#[patch]", "Cargo.toml#[replace]",
		"Cargo.toml#[workspace.dependencies]"}
)

// nodeInstall installs a Node project's dependencies with the package manager its
// lockfile names, from the lockfile when there is one, running no package's scripts.
func nodeInstall() []InstallCommand {
	return []InstallCommand{
		{Command: "pnpm install --frozen-lockfile --ignore-scripts", When: []Condition{{File: "pnpm-lock.yaml"}}, Tools: []string{"pnpm"}},
		{Command: "yarn install --immutable --mode=skip-build", When: []Condition{{File: "yarn.lock"}, {File: ".yarnrc.yml"}}, Tools: []string{"yarn"}},
		{Command: "yarn install --frozen-lockfile --ignore-scripts", When: []Condition{{File: "yarn.lock"}}, Tools: []string{"yarn"}},
		{Command: "npm ci --ignore-scripts --no-audit --no-fund", When: []Condition{{File: "package-lock.json"}}, Tools: []string{"npm"}},
		{Command: "npm ci --ignore-scripts --no-audit --no-fund", When: []Condition{{File: "npm-shrinkwrap.json"}}, Tools: []string{"npm"}},
		{Command: "npm install --ignore-scripts --no-audit --no-fund", Tools: []string{"npm"}},
	}
}

// nodeCommands are the node stack's commands: for each activity the package manager
// the lockfile names (pnpm-lock.yaml, yarn.lock), else npm.
func nodeCommands() []StackCommand {
	var out []StackCommand
	for _, a := range []struct{ activity, script, description string }{
		{"unit-test", "test", "Unit tests pass"},
		{"typecheck", "typecheck", "No type errors"},
		{"lint", "lint", "No lint errors"},
	} {
		run := " run " + a.script
		if a.script == "test" {
			run = " test"
		}
		script := Condition{Script: a.script}
		out = append(out,
			StackCommand{Activity: a.activity, Command: "pnpm" + run, Description: a.description,
				When: []Condition{script, {File: "pnpm-lock.yaml"}}, Tools: []string{"pnpm"}},
			StackCommand{Activity: a.activity, Command: "yarn" + run, Description: a.description,
				When: []Condition{script, {File: "yarn.lock"}}, Tools: []string{"yarn"}},
			StackCommand{Activity: a.activity, Command: "npm" + run, Description: a.description,
				When: []Condition{script}, Tools: []string{"npm"}},
		)
	}
	return out
}

// Regular expressions for a ScriptRuns condition on the test script: which runner it
// runs. node --test is node with --test among its arguments.
const (
	NodeTestScriptRE = `(^|[\s;&|(])node\s[^;&|]*--test(\s|=|$)`
	// NodeTestFilesScriptRE: node --test given test files by name, where a canary
	// beside them would not run.
	NodeTestFilesScriptRE = `(^|[\s;&|(])node\s[^;&|]*--test\s[^;&|]*\.[cm]?[jt]s(\s|$|[;&|)])`
	JestScriptRE          = `(^|[\s;&|(/])jest(\s|$)`
	VitestScriptRE        = `(^|[\s;&|(/])vitest(\s|$)`
	MochaScriptRE         = `(^|[\s;&|(/])mocha(\s|$)`
)

// nodeResults are the node stack's results entries: one per test runner the test
// script runs, each asking that runner for a format it writes to its own file (the
// code under test prints to standard output too), run by the package manager the
// lockfile names. A script that runs none of them has no structured results; a
// node --test script that names its test files gets results without a canary (one
// beside them would not run).
//
//	node --test  NODE_OPTIONS="--test-reporter=tap --test-reporter-destination=FILE" (options
//	             appended after a script's file arguments would be read as files)
//	jest         --ci --json --outputFile=FILE (built in: no jest-junit needed)
//	vitest       --reporter=junit --outputFile=FILE
//	mocha        --reporter xunit --reporter-option output=FILE
func nodeResults() []TestResults {
	file := ResultsFilePlaceholder
	runners := []struct {
		re, format, env, args, canary string
	}{
		{NodeTestFilesScriptRE, ResultsTAP, "f=" + file + "; NODE_OPTIONS=\"--test-reporter=tap --test-reporter-destination=\\\"$f\\\"\" ", "", ""},
		{NodeTestScriptRE, ResultsTAP, "f=" + file + "; NODE_OPTIONS=\"--test-reporter=tap --test-reporter-destination=\\\"$f\\\"\" ", "", CanaryNodeTest},
		{JestScriptRE, ResultsJestJSON, "", "--ci --json --outputFile=" + file, CanaryJest},
		{VitestScriptRE, ResultsJUnitXML, "", "--reporter=junit --outputFile=" + file, CanaryVitest},
		{MochaScriptRE, ResultsJUnitXML, "", "--reporter xunit --reporter-option output=" + file, CanaryMocha},
	}
	var out []TestResults
	for _, r := range runners {
		runs := Condition{ScriptRuns: "test: " + r.re}
		for _, pm := range []struct{ lock, command string }{
			{"pnpm-lock.yaml", "pnpm test"}, {"yarn.lock", "yarn test"}, {"", "npm test --"},
		} {
			cmd := r.env + pm.command
			if r.args != "" {
				cmd += " " + r.args
			} else {
				cmd = strings.TrimSuffix(cmd, " --")
			}
			when := []Condition{runs}
			if pm.lock != "" {
				when = append(when, Condition{File: pm.lock})
			}
			out = append(out, TestResults{Format: r.format, Command: cmd, When: when, Canary: r.canary})
		}
	}
	return out
}
