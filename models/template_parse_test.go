package models

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models/contract"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTemplateParseSeedSteps(t *testing.T) {
	tpl, err := ParseTemplate(readTestdata(t, "seed_steps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Name != "" || len(tpl.Steps) != 3 {
		t.Fatalf("name %q, %d steps", tpl.Name, len(tpl.Steps))
	}
	s0, s1, s2 := tpl.Steps[0].Completion, tpl.Steps[1].Completion, tpl.Steps[2].Completion
	if s0.Type != contract.CompletionFile || s0.Path != "notes/{task_id}/draft.md" || s0.MinLength != 250 || !strings.HasPrefix(s0.Evaluate, "Every user-visible") {
		t.Errorf("step 0: %+v", s0)
	}
	if s1.Type != contract.CompletionSignal || s1.Signal != "signed_off" || s1.Evaluate == "" {
		t.Errorf("step 1: %+v", s1)
	}
	if s2.Type != contract.CompletionNone {
		t.Errorf("step 2: %+v", s2)
	}
	// Without a name it is not valid until import names it after the file.
	if f := fieldsOf(t, tpl.Validate()); len(f) != 1 || f["name"] == "" {
		t.Errorf("fields %v", f)
	}
	tpl.Name = TemplateNameFromFile("testdata/Release Notes.yaml")
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
	if tpl.Name != "release-notes" || tpl.Steps[1].Completion.Path != contract.DefaultSignalOutputPath {
		t.Errorf("after validate: %q %+v", tpl.Name, tpl.Steps[1].Completion)
	}
}

func TestTemplateParseFull(t *testing.T) {
	tpl, err := ParseTemplate(readTestdata(t, "template_full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
	c := tpl.Steps[0].Completion
	if c.Timeout.Duration != 90*time.Minute || c.Cooldown.Duration != 90*time.Second || c.VerifyTimeout.Duration != 10*time.Minute ||
		len(c.Verify) != 2 || c.Checklist == nil || c.Checklist.Count != 3 || !c.Clean || c.MaxAttempts != 3 || c.DoneToken != "BUILD_DONE" {
		t.Errorf("completion %+v", c)
	}
	st := tpl.Steps[0]
	if st.Approve != "runner" || st.Verify != "lead" || st.Review == nil || st.Review.MaxRounds != 2 ||
		len(st.Verification.Criteria) != 2 || st.Verification.Criteria[1].Timing != contract.TimingDeferred {
		t.Errorf("step %+v", st)
	}
}

func TestTemplateParseJSON(t *testing.T) {
	tpl, err := ParseTemplate(readTestdata(t, "template_full.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tpl.ID != 0 || tpl.CreatorID != 0 || !tpl.CreatedAt.IsZero() || tpl.Name != "json-flow" || tpl.Version != 2 {
		t.Errorf("identity not cleared or name wrong: %+v", tpl)
	}
	c := tpl.Steps[0].Completion
	if len(c.Verify) != 1 || c.Timeout.Duration != 45*time.Minute || c.VerifyTimeout.Duration != 2*time.Minute {
		t.Errorf("completion %+v", c)
	}
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTemplateRoundTrip(t *testing.T) {
	for _, name := range []string{"template_full.yaml", "template_full.json", "seed_steps.yaml"} {
		t.Run(name, func(t *testing.T) {
			tpl, err := ParseTemplate(readTestdata(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, normalize := range []bool{false, true} {
				if normalize {
					tpl.Normalize()
				}
				out, err := MarshalTemplateYAML(tpl)
				if err != nil {
					t.Fatal(err)
				}
				back, err := ParseTemplate(out)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if !reflect.DeepEqual(tpl, back) {
					t.Errorf("round trip differs:\n%+v\n%+v\n%s", tpl, back, out)
				}
			}
		})
	}
	if _, err := MarshalTemplateYAML(nil); err == nil {
		t.Error("nil template marshalled")
	}
}

func TestTemplateMalformed(t *testing.T) {
	step := "steps:\n  - role: dev\n    brief: b\n"
	for _, tc := range []struct {
		name, in string
		code     string
		field    string // for EINVALID
		contains string // for EBADREQUEST: part of the message
	}{
		{"empty", "", EBADREQUEST, "", "empty"},
		{"only spaces", "  \n ", EBADREQUEST, "", "empty"},
		{"yaml syntax", "name: x\nsteps: [\n", EBADREQUEST, "", "line"},
		{"yaml tab indent", "name: x\n\tsteps: []\n", EBADREQUEST, "", "line"},
		{"json syntax", "{\"name\": \"x\",\n\"steps\": [}", EBADREQUEST, "", "line 2"},
		{"json trailing garbage", `{"name":"x"} {}`, EBADREQUEST, "", ""},
		{"json array", "[1]", EBADREQUEST, "", ""},
		{"yaml scalar document", "just words", EBADREQUEST, "", "mapping"},
		{"two documents", "name: a\n" + step + "---\nname: b\n", EBADREQUEST, "", "one YAML document"},
		{"steps not a list", "name: x\nsteps: 3\n", EBADREQUEST, "", "line 2"},
		{"min_length not a number", "name: x\n" + step + "    completion: {type: file, min_length: lots}\n", EBADREQUEST, "", "line 5"},
		{"bad duration", "name: x\n" + step + "    completion: {timeout: soonish}\n", EBADREQUEST, "", "line 5"},
		{"json wrong type", `{"name": "x", "steps": [{"role": 5}]}`, EBADREQUEST, "", "line 1"},
		{"unknown top field", "name: x\nowner: me\n" + step, EINVALID, "owner", ""},
		{"unknown step field", "name: x\n" + step + "    rol: dev\n", EINVALID, "steps[0].rol", ""},
		{"unknown completion field", "name: x\n" + step + "    completion: {type: file, minlength: 3}\n", EINVALID, "steps[0].completion.minlength", ""},
		{"unknown criterion field", "name: x\n" + step + "    verification: {criteria: [{activity: a, description: d, when: now}]}\n", EINVALID, "steps[0].verification.criteria[0].when", ""},
		{"unknown review field", "name: x\n" + step + "    review: {role: r, rounds: 2}\n", EINVALID, "steps[0].review.rounds", ""},
		{"unknown checklist field", "name: x\n" + step + "    completion: {checklist: {path: a.md, n: 1}}\n", EINVALID, "steps[0].completion.checklist.n", ""},
		{"json unknown field", `{"name": "x", "steps": [{"role": "dev", "brief": "b", "completion": {"typ": "file"}}]}`, EINVALID, "steps[0].completion.typ", ""},
		{"both budgets", "name: x\n" + step + "    completion: {max_attempts: 2, max_iterations: 3}\n", EINVALID, "max_attempts", ""},
		{"no name", step, EINVALID, "name", ""},
		{"bad name", "name: My Flow\n" + step, EINVALID, "name", ""},
		{"name too long", "name: " + strings.Repeat("a", 65) + "\n" + step, EINVALID, "name", ""},
		{"name starts with dot", "name: .hidden\n" + step, EINVALID, "name", ""},
		{"no steps", "name: x\nsteps: []\n", EINVALID, "steps", ""},
		{"too many steps", "name: x\nsteps:\n" + strings.Repeat("  - {role: dev, brief: b}\n", 51), EINVALID, "steps", ""},
		{"step without role", "name: x\nsteps:\n  - {brief: b}\n  - {role: dev, brief: b}\n  - {brief: c}\n", EINVALID, "steps[2].role", ""},
		{"step bad role", "name: x\nsteps:\n  - {role: 'dev team', brief: b}\n", EINVALID, "steps[0].role", ""},
		{"step without brief", "name: x\nsteps:\n  - {role: dev}\n", EINVALID, "steps[0].brief", ""},
		{"step long name", "name: x\nsteps:\n  - {role: dev, brief: b, name: " + strings.Repeat("n", 101) + "}\n", EINVALID, "steps[0].name", ""},
		{"bad approve", "name: x\nsteps:\n  - {role: dev, brief: b, approve: 'the boss'}\n", EINVALID, "steps[0].approve", ""},
		{"bad verify policy", "name: x\nsteps:\n  - {role: dev, brief: b, verify: 'Any One'}\n", EINVALID, "steps[0].verify", ""},
		{"path escapes", "name: x\n" + step + "    completion: {type: file, path: ../../etc/passwd}\n", EINVALID, "steps[0].completion.path", ""},
		{"absolute path", "name: x\n" + step + "    completion: {type: file, path: /tmp/out.md}\n", EINVALID, "steps[0].completion.path", ""},
		{"signal missing", "name: x\n" + step + "    completion: {type: signal}\n", EINVALID, "steps[0].completion.signal", ""},
		{"empty verify", "name: x\n" + step + "    completion: {verify: [go test, '  ']}\n", EINVALID, "steps[0].completion.verify[1]", ""},
		{"unknown completion type", "name: x\n" + step + "    completion: {type: email}\n", EINVALID, "steps[0].completion.type", ""},
		{"too many attempts", "name: x\n" + step + "    completion: {max_attempts: 50}\n", EINVALID, "steps[0].completion.max_attempts", ""},
		{"timeout too long", "name: x\n" + step + "    completion: {timeout: 48h}\n", EINVALID, "steps[0].completion.timeout", ""},
		{"unknown verification type", "name: x\n" + step + "    verification: {type: maybe}\n", EINVALID, "steps[0].verification.type", ""},
		{"criterion without activity", "name: x\n" + step + "    verification: {criteria: [{description: d}]}\n", EINVALID, "steps[0].verification.criteria[0].activity", ""},
		{"bad timing", "name: x\n" + step + "    verification: {criteria: [{activity: e2e, description: d, timing: soon}]}\n", EINVALID, "steps[0].verification.criteria[0].timing", ""},
		{"review without role", "name: x\n" + step + "    review: {max_rounds: 1}\n", EINVALID, "steps[0].review.role", ""},
		{"review too many rounds", "name: x\n" + step + "    review: {role: reviewer, max_rounds: 5}\n", EINVALID, "steps[0].review.max_rounds", ""},
		{"long description", "name: x\ndescription: " + strings.Repeat("d", 2100) + "\n" + step, EINVALID, "description", ""},
		{"negative version", "name: x\nversion: -1\n" + step, EINVALID, "version", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := ParseTemplate([]byte(tc.in))
			if err == nil {
				err = tpl.Validate()
			}
			if err == nil {
				t.Fatalf("accepted: %+v", tpl)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not a *Error: %v", err)
			}
			if e.Code != tc.code {
				t.Fatalf("code %s, want %s: %v", e.Code, tc.code, err)
			}
			if tc.field != "" {
				if _, ok := e.Fields[tc.field]; !ok {
					t.Fatalf("want field %s, got %v", tc.field, e.Fields)
				}
			}
			if tc.contains != "" && !strings.Contains(e.Message, tc.contains) {
				t.Fatalf("message %q lacks %q", e.Message, tc.contains)
			}
		})
	}
}

func TestTemplateUnknownFieldMessage(t *testing.T) {
	_, err := ParseTemplate([]byte("name: x\nsteps:\n  - role: dev\n    brief: b\n    completion:\n      signl: x\n"))
	var e *Error
	if !errors.As(err, &e) || e.Fields["steps[0].completion.signl"] != "unknown field (line 6)" || !strings.Contains(e.Message, "signl") {
		t.Fatalf("%#v", err)
	}
	_, err = ParseTemplate([]byte("name: x\na: 1\nb: 2\nsteps: []\n"))
	if !errors.As(err, &e) || e.Message != "unknown fields" || len(e.Fields) != 2 {
		t.Fatalf("%#v", err)
	}
	// YAML merge keys are checked through.
	_, err = ParseTemplate([]byte("name: x\nbase: &b {role: dev, brief: b}\nsteps:\n  - <<: *b\n"))
	if !errors.As(err, &e) || e.Fields["base"] == "" {
		t.Fatalf("%#v", err)
	}
	tpl, err := ParseTemplate([]byte("name: x\nsteps:\n  - &s {role: dev, brief: b}\n  - <<: [*s]\n    name: two\n"))
	if err != nil || len(tpl.Steps) != 2 || tpl.Steps[1].Role != "dev" {
		t.Fatalf("%v %+v", err, tpl)
	}
}

func TestTemplateNameFromFile(t *testing.T) {
	for in, want := range map[string]string{
		"flows/feature.yaml":              "feature",
		"Feature Flow.yml":                "feature-flow",
		`C:\tpl\Release.Notes.json`:       "release.notes",
		"_x_.yaml":                        "x",
		strings.Repeat("a", 70) + ".yaml": strings.Repeat("a", 64),
		"noext":                           "noext",
	} {
		if got := TemplateNameFromFile(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}
