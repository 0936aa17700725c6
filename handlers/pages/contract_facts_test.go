package pages

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
)

// factsByTerm indexes a definition list by term, a list's values joined by "|".
func factsByTerm(items []components.DefItem) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		v := it.Value
		for i, s := range it.Values {
			if i > 0 {
				v += "|"
			}
			v += s
		}
		out[it.Term] = v
	}
	return out
}

// TestContractFactsNormalised: the task page's contract card shows the normalised
// contract, as the worker's brief does: a contract with only an output path reads as
// a file contract with the default attempt budget and timeout, an unset verification
// type as auto and a review role in canonical case, whatever the stored form left
// unset. The contract it is given is not changed.
func TestContractFactsNormalised(t *testing.T) {
	ct := contract.Contract{
		Completion: contract.Completion{Path: " {task_id}/report.md ", Verify: []string{" go test ./... "}},
		Review:     &contract.Review{Role: " Reviewer "},
	}
	got := factsByTerm(contractFacts(ct, 7))
	for term, want := range map[string]string{
		"Completion":         string(contract.CompletionFile),
		"Output path":        "7/report.md",
		"Verify commands":    "go test ./...",
		"Attempt budget":     "2",
		"Timeout":            contract.DefaultTimeout.String(),
		"Verification":       string(contract.VerifyAuto),
		"Artifact review by": "reviewer",
	} {
		if got[term] != want {
			t.Errorf("%s = %q, want %q (all: %v)", term, got[term], want, got)
		}
	}
	if ct.Completion.Type != "" || ct.Completion.MaxAttempts != 0 || ct.Review.Role != " Reviewer " {
		t.Errorf("contractFacts changed the contract it was given: %+v", ct)
	}

	signal := factsByTerm(contractFacts(contract.Contract{Completion: contract.Completion{Type: "Signal", Signal: "ok",
		MaxAttempts: 5, Timeout: contract.Duration{Duration: time.Hour}}}, 3))
	for term, want := range map[string]string{"Completion": "signal", "Output path": "3/signal.json", "Attempt budget": "5", "Timeout": "1h0m0s"} {
		if signal[term] != want {
			t.Errorf("signal contract: %s = %q, want %q", term, signal[term], want)
		}
	}
}

// TestInboxCompletionFactsNormalised: a blocked item's completion criteria are the
// normalised completion contract: a payload with only a path shows type file and the
// default max_attempts and timeout the checks applied; one with nothing set, type none.
func TestInboxCompletionFactsNormalised(t *testing.T) {
	got := factsByTerm(completionFacts(contract.Completion{Path: "out/9.md"}))
	for term, want := range map[string]string{
		"type":         string(contract.CompletionFile),
		"path":         "out/9.md",
		"max_attempts": "2",
		"timeout":      contract.DefaultTimeout.String(),
	} {
		if got[term] != want {
			t.Errorf("%s = %q, want %q (all: %v)", term, got[term], want, got)
		}
	}
	if none := factsByTerm(completionFacts(contract.Completion{})); none["type"] != string(contract.CompletionNone) || none["path"] != "" {
		t.Errorf("an empty completion shows type %q, path %q; want none and no path", none["type"], none["path"])
	}
}
