package pkgjson

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"testing"
)

// npmCases are package.json texts on which the contract code's former reader (a
// struct: keys matched case-insensitively, a repeated "scripts" object merged, a
// byte-order mark refused) and the judge's (JSON.parse: the last key wins) read
// different scripts, and a few ordinary ones.
var npmCases = []string{
	`{"scripts": {"test": "jest", "lint": "eslint ."}}`,
	`{"scripts": {"test": "jest"}, "scripts": {"lint": "eslint ."}}`,
	`{"Scripts": {"test": "exit 0"}, "scripts": {"test": "jest"}}`,
	`{"SCRIPTS": {"test": "exit 0"}}`,
	"\xEF\xBB\xBF{\"scripts\": {\"test\": \"jest\"}}",
	`{"scripts": {"test": "jest", "test": "exit 0"}}`,
	`{"scripts": {"test": 5, "build": null, "lint": "eslint \u0041"}}`,
	`{"scripts": "npm test"}`,
	`{"name": "x"}`,
	`null`,
}

// TestScriptsAgreeWithNpm reads each case with npm's own parser
// (json-parse-even-better-errors, as read-package-json-fast uses it) and compares
// the string-valued scripts with Scripts.
func TestScriptsAgreeWithNpm(t *testing.T) {
	const parser = "/usr/lib/node_modules/npm/node_modules/json-parse-even-better-errors"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(parser); err != nil {
		t.Skip("npm's json-parse-even-better-errors not found")
	}
	in, _ := json.Marshal(npmCases)
	script := `const parse = require(process.argv[1]);
console.log(JSON.stringify(JSON.parse(process.argv[2]).map(text => {
  const doc = parse(text), out = {};
  const s = doc && doc.scripts;
  if (s && typeof s === "object") for (const k of Object.keys(s)) if (typeof s[k] === "string") out[k] = s[k];
  return out;
})));`
	out, err := exec.Command("node", "-e", script, parser, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []map[string]string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(npmCases) {
		t.Fatalf("node said %s (%v)", out, err)
	}
	for i, text := range npmCases {
		got, err := Scripts([]byte(text))
		if err != nil {
			t.Errorf("Scripts(%q): %v", text, err)
		}
		if !maps.Equal(got, want[i]) {
			t.Errorf("Scripts(%q) = %q, npm reads %q", text, got, want[i])
		}
	}
	if _, err := Scripts([]byte(`{"scripts":`)); err != ErrNotObject {
		t.Errorf("a cut-off package.json: err = %v, want ErrNotObject", err)
	}
}
