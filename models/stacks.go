package models

import "strings"

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
	// (a TOML table and those below it), setup.cfg#[tool:pytest] (an INI section).
	Protect []string `json:"protect,omitempty" yaml:"protect,omitempty"`
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
			Protect: []string{"*_test.go", "testdata/**", ".golangci.*"},
			Results: []TestResults{{Format: ResultsGoTestJSON, Command: "go test -json ./...", Canary: CanaryGo}},
		},
		{
			Name:     "node",
			Detect:   []Condition{{Script: "test"}},
			Commands: nodeCommands(),
			Protect: []string{"test/**", "tests/**", "__tests__/**", "**/*.test.*", "**/*.spec.*",
				"jest.config.*", "vitest.config.*", ".mocharc*", ".eslintrc*", "eslint.config.*",
				"package.json#scripts"},
			Results: nodeResults(),
		},
		{
			Name:   "python",
			Detect: []Condition{{Config: "pytest"}},
			Commands: []StackCommand{
				{Activity: "unit-test", Command: "python3 -m pytest -q", Description: "Unit tests pass", Tools: []string{"python3"}},
				{Activity: "lint", Command: "ruff check .", Description: "ruff reports no problems", When: []Condition{{Config: "ruff"}}, Tools: []string{"ruff"}},
				{Activity: "typecheck", Command: "mypy .", Description: "mypy reports no type errors", When: []Condition{{Config: "mypy"}}, Tools: []string{"mypy"}},
			},
			Protect: []string{"tests/**", "test_*.py", "*_test.py", "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini",
				"pyproject.toml#[tool.pytest]", "pyproject.toml#[project.entry-points.pytest11]", "setup.cfg#[tool:pytest]", "ruff.toml", ".ruff.toml", "mypy.ini",
				"pyproject.toml#[tool.ruff]", "pyproject.toml#[tool.mypy]"},
			Results: []TestResults{{Format: ResultsJUnitXML, Command: "python3 -m pytest -q --junitxml=" + ResultsFilePlaceholder, Canary: CanaryPytest}},
		},
		{
			Name:     "rust",
			Detect:   []Condition{{File: "Cargo.toml"}},
			Commands: []StackCommand{{Activity: "unit-test", Command: "cargo test", Description: "Unit tests pass", Tools: []string{"cargo"}}},
			Protect:  []string{"tests/**", "benches/**"},
			Results:  []TestResults{{Format: ResultsCargoTest, Command: "cargo test"}},
		},
		{
			Name:     "make",
			Detect:   []Condition{{Target: "test"}},
			Commands: []StackCommand{{Activity: "unit-test", Command: "make test", Description: "make test passes", Tools: []string{"make"}}},
			Protect:  []string{"Makefile#targets", "GNUmakefile#targets", "makefile#targets"},
		},
	})
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
