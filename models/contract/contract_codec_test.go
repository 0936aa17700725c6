package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestContractDurationText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {30 * time.Minute, "30m"}, {90 * time.Second, "1m30s"}, {time.Hour, "1h"},
		{90 * time.Minute, "1h30m"}, {1500 * time.Millisecond, "1.5s"}, {25*time.Hour + time.Second, "25h0m1s"},
	} {
		if got := (Duration{tc.d}).String(); got != tc.want {
			t.Errorf("String(%v) = %q, want %q", tc.d, got, tc.want)
		}
		b, _ := Duration{tc.d}.MarshalText()
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back.Duration != tc.d {
			t.Errorf("text round trip of %v: %v %v", tc.d, back, err)
		}
	}
}

func TestContractDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{`"30m"`, 30 * time.Minute, false},
		{`"90s"`, 90 * time.Second, false},
		{`"1h30m"`, 90 * time.Minute, false},
		{`1800`, 30 * time.Minute, false},
		{`"1800"`, 30 * time.Minute, false},
		{`""`, 0, false},
		{`null`, 0, false},
		{`1.5`, 0, true},
		{`"soon"`, 0, true},
		{`true`, 0, true},
		{`"x`, 0, true},
		{`99999999999999999`, 0, true},
	} {
		var d Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if tc.bad != (err != nil) || (!tc.bad && d.Duration != tc.want) {
			t.Errorf("%s: got %v, %v", tc.in, d.Duration, err)
		}
	}
	b, err := json.Marshal(Duration{30 * time.Minute})
	if err != nil || string(b) != `"30m"` {
		t.Errorf("marshal: %s %v", b, err)
	}
}

func TestContractDurationYAML(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{`d: 30m`, 30 * time.Minute, false},
		{`d: "90s"`, 90 * time.Second, false},
		{`d: 90`, 90 * time.Second, false},
		{`d: ~`, 0, false},
		{`d: 1.5`, 0, true},
		{`d: later`, 0, true},
		{`d: [1]`, 0, true},
	} {
		var v struct {
			D Duration `yaml:"d"`
		}
		err := yaml.Unmarshal([]byte(tc.in), &v)
		if tc.bad != (err != nil) || (!tc.bad && v.D.Duration != tc.want) {
			t.Errorf("%s: got %v, %v", tc.in, v.D.Duration, err)
		}
	}
	out, _ := yaml.Marshal(struct {
		D Duration `yaml:"d"`
	}{Duration{time.Hour}})
	if strings.TrimSpace(string(out)) != "d: 1h" {
		t.Errorf("yaml marshal: %q", out)
	}
}

func TestContractCompletionVerifyForms(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		json     bool
		want     []string
		bad      bool
	}{
		{"json string", `{"verify":"go test ./..."}`, true, []string{"go test ./..."}, false},
		{"json list", `{"verify":["a","b"]}`, true, []string{"a", "b"}, false},
		{"json null", `{"verify":null}`, true, nil, false},
		{"json number", `{"verify":3}`, true, nil, true},
		{"json list of numbers", `{"verify":[3]}`, true, nil, true},
		{"yaml string", "verify: go test ./...", false, []string{"go test ./..."}, false},
		{"yaml list", "verify:\n  - a\n  - b", false, []string{"a", "b"}, false},
		{"yaml flow list", "verify: [a, b]", false, []string{"a", "b"}, false},
		{"yaml null", "verify:", false, nil, false},
		{"yaml nested", "verify: [[a]]", false, nil, true},
		{"yaml map", "verify: {a: b}", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Completion
			var err error
			if tc.json {
				err = json.Unmarshal([]byte(tc.in), &c)
			} else {
				err = yaml.Unmarshal([]byte(tc.in), &c)
			}
			if tc.bad {
				if err == nil {
					t.Fatalf("want an error, got %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.Verify, "|") != strings.Join(tc.want, "|") || len(c.Verify) != len(tc.want) {
				t.Errorf("verify = %q, want %q", c.Verify, tc.want)
			}
		})
	}
}

func TestContractCompletionSeedAliases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		json     bool
		want     Completion
		bad      bool
	}{
		{"signal without type is a done token", `signal: "ALL_DONE"`, false,
			Completion{Type: CompletionNone, DoneToken: "ALL_DONE"}, false},
		{"json signal without type", `{"signal":"ALL_DONE"}`, true,
			Completion{Type: CompletionNone, DoneToken: "ALL_DONE"}, false},
		{"signal without type but with path", "signal: X\npath: out.md", false,
			Completion{Path: "out.md", DoneToken: "X"}, false},
		{"signal with type signal stays", "type: signal\nsignal: approved", false,
			Completion{Type: CompletionSignal, Signal: "approved"}, false},
		{"signal and done token without type", "signal: a\ndone_token: b", false,
			Completion{Signal: "a", DoneToken: "b"}, false},
		{"max_iterations", "max_iterations: 5", false, Completion{MaxAttempts: 5}, false},
		{"json max_iterations", `{"max_iterations":5}`, true, Completion{MaxAttempts: 5}, false},
		{"both budgets", "max_iterations: 5\nmax_attempts: 3", false, Completion{}, true},
		{"json both budgets", `{"max_iterations":5,"max_attempts":3}`, true, Completion{}, true},
		{"unknown yaml field", "type: file\nsignl: x", false, Completion{}, true},
		{"unknown json field", `{"type":"file","signl":"x"}`, true, Completion{}, true},
		{"unknown checklist field", `{"checklist":{"path":"a","cnt":1}}`, true, Completion{}, true},
		{"yaml not a mapping", "[1, 2]", false, Completion{}, true},
		{"yaml bad duration", "timeout: soon", false, Completion{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Completion
			var err error
			if tc.json {
				err = json.Unmarshal([]byte(tc.in), &c)
			} else {
				err = yaml.Unmarshal([]byte(tc.in), &c)
			}
			if tc.bad {
				if err == nil {
					t.Fatalf("want an error, got %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Type != tc.want.Type || c.Signal != tc.want.Signal || c.DoneToken != tc.want.DoneToken ||
				c.MaxAttempts != tc.want.MaxAttempts || c.Path != tc.want.Path {
				t.Errorf("got %+v, want %+v", c, tc.want)
			}
		})
	}
	// The unknown field is named.
	var c Completion
	err := yaml.Unmarshal([]byte("type: file\nsignl: x"), &c)
	if err == nil || !strings.Contains(err.Error(), "signl") {
		t.Errorf("error does not name the field: %v", err)
	}
	err = json.Unmarshal([]byte(`{"signl":"x"}`), &c)
	if err == nil || !strings.Contains(err.Error(), "signl") {
		t.Errorf("error does not name the field: %v", err)
	}
}

func TestContractCompletionJSONRoundTrip(t *testing.T) {
	c := Completion{
		Type: CompletionFile, Path: "a/{task_id}.md", MinLength: 10, DoneToken: "OK",
		Verify: []string{"go test ./..."}, VerifyTimeout: Duration{time.Minute}, Evaluate: "good",
		MaxAttempts: 3, Timeout: Duration{time.Hour}, Cooldown: Duration{5 * time.Second},
		Clean: true, Checklist: &Checklist{Path: "c.md", Count: 2},
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"timeout":"1h"`) || !strings.Contains(string(b), `"verify":["go test ./..."]`) {
		t.Errorf("unexpected JSON %s", b)
	}
	var back Completion
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Errorf("round trip changed:\n%s\n%s", b, b2)
	}
	// Zero durations are left out rather than written as "0s".
	b, _ = json.Marshal(Completion{Type: CompletionNone})
	if string(b) != `{"type":"none"}` {
		t.Errorf("zero completion JSON = %s", b)
	}
	// A whole contract round-trips through JSON too (the store keeps it as JSON).
	ct := Contract{Completion: c, Verification: Verification{Type: VerifySkip, Criteria: []Criterion{{Activity: "lint", Description: "d"}}}}
	b, _ = json.Marshal(ct)
	var ct2 Contract
	if err := json.Unmarshal(b, &ct2); err != nil {
		t.Fatal(err)
	}
	if ct.Hash() != ct2.Hash() {
		t.Error("contract JSON round trip changed the hash")
	}
	var nullC Completion
	if err := json.Unmarshal([]byte("null"), &nullC); err != nil {
		t.Error(err)
	}
	if err := yaml.Unmarshal([]byte("completion: ~"), &ct2); err != nil {
		t.Error(err)
	}
}

func TestContractLineOf(t *testing.T) {
	data := []byte("a\nb\nc")
	if lineOf(data, 0) != 1 || lineOf(data, 2) != 2 || lineOf(data, 100) != 3 || lineOf(data, -1) != 1 {
		t.Error("lineOf")
	}
}
