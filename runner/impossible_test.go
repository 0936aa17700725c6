package runner

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestEveryBriefSaysHowToSayImpossible: a worker's brief (and the template editor's
// preview of it) says how to say the task cannot be done as specified, that it is no
// failure and that gaming the checks is; a signal contract's also names the signal
// file's field. The reviewer's brief, which judges work rather than doing it, does not.
func TestEveryBriefSaysHowToSayImpossible(t *testing.T) {
	file := &models.Task{ID: 3, Title: "Add", Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out.md"}}}
	signal := &models.Task{ID: 4, Title: "Approve", Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionSignal, Path: "s.json", Signal: "approved"}}}
	for _, c := range []struct {
		name, brief string
		field       bool
	}{
		{"file", buildBrief(briefInput{task: file, attempt: 1}), false},
		{"signal", buildBrief(briefInput{task: signal, attempt: 1}), true},
		{"preview", PreviewBrief(file, "/w"), false},
	} {
		for _, want := range []string{"`IMPOSSIBLE: <the reason>`", "is not a failure", "Changing the tests or special-casing the checks"} {
			if !strings.Contains(c.brief, want) {
				t.Errorf("%s brief lacks %q:\n%s", c.name, want, c.brief)
			}
		}
		if got := strings.Contains(c.brief, `{"impossible":"the reason"}`); got != c.field {
			t.Errorf("%s brief names the signal field: %v, want %v", c.name, got, c.field)
		}
	}
	if rb := reviewBrief(file, &attemptRun{}, 1, 3, []byte("the work"), reviewInput{}); strings.Contains(rb, "IMPOSSIBLE") {
		t.Errorf("the reviewer's brief asks for a claim:\n%s", rb)
	}
}

// TestImpossibleLastLine: only the last non-empty line counts, with a reason.
func TestImpossibleLastLine(t *testing.T) {
	for out, want := range map[string]string{
		"work\nIMPOSSIBLE: the tests contradict the spec\n\n": "the tests contradict the spec",
		"IMPOSSIBLE: early\nthen I did it\nTASK_COMPLETE":     "",
		"IMPOSSIBLE:   \n":         "",
		"it is IMPOSSIBLE: to say": "",
	} {
		if got := lastLineImpossible([]byte(out)); got != want {
			t.Errorf("%q: %q, want %q", out, got, want)
		}
	}
}
