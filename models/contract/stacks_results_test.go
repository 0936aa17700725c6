package contract

import (
	"strings"
	"testing"
)

// TestNodeResultsByRunner: the node stack asks each test runner for a format it
// writes, in its own file, by what the package.json test script runs; a script
// running none of them gets no structured results (never a flag its runner refuses).
func TestNodeResultsByRunner(t *testing.T) {
	rules := DefaultRules()
	cases := []struct {
		script, lock, format, canary string
		want                         []string // substrings of the command
	}{
		{"node --test", "", ResultsTAP, CanaryNodeTest, []string{"--test-reporter=tap", "--test-reporter-destination=", "npm test"}},
		{"node --require ./setup.js --test test/", "", ResultsTAP, CanaryNodeTest, []string{"NODE_OPTIONS=", "npm test"}},
		{"node --test", "pnpm-lock.yaml", ResultsTAP, CanaryNodeTest, []string{"pnpm test"}},
		{"node --test test/a.test.js test/b.test.mjs", "", ResultsTAP, "", []string{"--test-reporter=tap"}},
		{"jest --coverage", "", ResultsJestJSON, CanaryJest, []string{"npm test -- --ci --json --outputFile="}},
		{"npx jest", "yarn.lock", ResultsJestJSON, CanaryJest, []string{"yarn test --ci --json"}},
		{"vitest run", "", ResultsJUnitXML, CanaryVitest, []string{"npm test -- --reporter=junit --outputFile="}},
		{"mocha 'test/**/*.spec.js'", "", ResultsJUnitXML, CanaryMocha, []string{"npm test -- --reporter xunit --reporter-option output="}},
		{"tap test/*.js", "", "", "", nil},
		{"node --test-only x.js", "", "", "", nil},
		{"eslint . && jest", "", ResultsJestJSON, CanaryJest, []string{"--json"}},
	}
	for _, c := range cases {
		facts := WorkspaceFacts{Files: []string{"package.json"}, Scripts: []string{"test"}, ScriptCommands: map[string]string{"test": c.script}}
		if c.lock != "" {
			facts.Files = append(facts.Files, c.lock)
		}
		res, ok := rules.TestResultsFor(Criterion{Stack: "node", Activity: "unit-test"}, facts)
		if c.format == "" {
			if ok {
				t.Errorf("%q: results %+v, want none", c.script, res)
			}
			continue
		}
		if !ok || res.Format != c.format || res.Canary != c.canary || !strings.Contains(res.Command, ResultsFilePlaceholder) {
			t.Errorf("%q: results %+v ok %v, want format %s canary %s with a results file", c.script, res, ok, c.format, c.canary)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(res.Command, w) {
				t.Errorf("%q: command %q lacks %q", c.script, res.Command, w)
			}
		}
	}
	if fe := rules.Validate(); fe != nil {
		t.Fatalf("default rules invalid: %v", fe)
	}
}

// TestScriptRunsCondition: the condition reads the script's command; a malformed one
// is refused by the rules' validation and never holds.
func TestScriptRunsCondition(t *testing.T) {
	f := WorkspaceFacts{ScriptCommands: map[string]string{"test": "vitest run"}}
	if ok, why := f.Holds(Condition{ScriptRuns: "test: " + VitestScriptRE}); !ok || !strings.Contains(why, "vitest run") {
		t.Errorf("vitest: %v %q", ok, why)
	}
	if ok, _ := f.Holds(Condition{ScriptRuns: "test: " + JestScriptRE}); ok {
		t.Error("jest held for a vitest script")
	}
	if ok, why := f.Holds(Condition{ScriptRuns: "lint: eslint"}); ok || !strings.Contains(why, "no package.json script lint") {
		t.Errorf("missing script: %v %q", ok, why)
	}
	for _, bad := range []string{"test", "test: (", ": x"} {
		if ok, _ := f.Holds(Condition{ScriptRuns: bad}); ok {
			t.Errorf("%q held", bad)
		}
		r := DefaultRules()
		r.Stacks[1].Results[0].When = []Condition{{ScriptRuns: bad}}
		if r.Validate() == nil {
			t.Errorf("%q: rules valid", bad)
		}
	}
}
