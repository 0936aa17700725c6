package models

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/models/contract"
)

// TestMaxAttemptsBelowOne: a budget given below 1 (0 included) is a field error; one
// left out is the default.
func TestMaxAttemptsBelowOne(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		json     bool
		want     int // 0: refused
	}{
		{"json 0", `{"max_attempts":0}`, true, 0},
		{"yaml 0", "max_attempts: 0", false, 0},
		{"json max_iterations 0", `{"max_iterations":0}`, true, 0},
		{"yaml max_iterations 0", "max_iterations: 0", false, 0},
		{"json -1", `{"max_attempts":-1}`, true, 0},
		{"yaml -3", "max_attempts: -3", false, 0},
		{"json left out", `{"type":"none"}`, true, contract.DefaultMaxAttempts},
		{"yaml left out", "type: none", false, contract.DefaultMaxAttempts},
		{"json null", `{"max_attempts":null}`, true, contract.DefaultMaxAttempts},
		{"json 1", `{"max_attempts":1}`, true, 1},
		{"yaml 7", "max_attempts: 7", false, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cp contract.Completion
			var err error
			if tc.json {
				err = json.Unmarshal([]byte(tc.in), &cp)
			} else {
				err = yaml.Unmarshal([]byte(tc.in), &cp)
			}
			if err != nil {
				t.Fatal(err)
			}
			c := contract.Contract{Completion: cp}
			c.Normalize()
			f := fieldsOf(t, c.Validate())
			if tc.want == 0 {
				if !strings.Contains(f["completion.max_attempts"], "must be at least 1") {
					t.Fatalf("want a field error, got %v (max_attempts %d)", f, c.Completion.MaxAttempts)
				}
				return
			}
			if len(f) != 0 || c.Completion.MaxAttempts != tc.want {
				t.Fatalf("max_attempts %d, errors %v", c.Completion.MaxAttempts, f)
			}
		})
	}

	// Through a task: the field is named under contract, and nothing is built.
	var spec TaskSpec
	if err := json.Unmarshal([]byte(`{"title":"x","contract":{"completion":{"max_attempts":0}}}`), &spec); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.build(DefaultRules(), genNow); ErrorCode(err) != EINVALID || fieldsOf(t, err)["contract.completion.max_attempts"] == "" {
		t.Fatalf("task with max_attempts 0: %v", err)
	}
	// Through a template and a task file (YAML).
	tpl, err := ParseTemplate([]byte("name: x\nsteps:\n  - role: developer\n    brief: b\n    completion: {max_attempts: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tpl.Validate(); fieldsOf(t, err)["steps[0].completion.max_attempts"] == "" {
		t.Fatalf("template with max_attempts 0: %v", err)
	}
	task, err := ParseTaskMarkdown([]byte("---\ntitle: x\ncompletion:\n  max_iterations: 0\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	task.Contract.Normalize()
	if err := task.Validate(); fieldsOf(t, err)["contract.completion.max_attempts"] == "" {
		t.Fatalf("task file with max_iterations 0: %v", err)
	}
	// A contract built in code with a zero budget still means the default.
	c := contract.Contract{}
	c.Normalize()
	if c.Completion.MaxAttempts != contract.DefaultMaxAttempts || c.Validate() != nil {
		t.Fatalf("%+v", c.Completion)
	}
}
