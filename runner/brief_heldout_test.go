package runner

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestBriefNeverQuotesAHeldOutTest: should a diagnosis or the output tail of the
// attempt a brief revises name a held-out test, its file or quote a line of it (the
// judge never puts one there, but a later stage or a bug could), the brief replaces
// those lines; the rest of the diagnosis stays, and without held-out tests it is
// quoted as it is.
func TestBriefNeverQuotesAHeldOutTest(t *testing.T) {
	held := contract.HeldOutTest{Path: "calc_hidden_test.go",
		Content: "package calc\n\nfunc TestAddLarge(t *testing.T) {\n\tif got := Add(1000, 234); got != 1234 {\n\t\tt.Fail()\n\t}\n}\n"}
	task := &models.Task{ID: 7, Title: "Fix Add", Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone},
		Verification: contract.Verification{Type: contract.VerifyAuto, HeldOut: []contract.HeldOutTest{held}}}}
	prev := &models.Attempt{Number: 1, Stage: models.StageVerify,
		Diagnosis:  "go test failed\n--- FAIL: TestAddLarge\ncalc_hidden_test.go:4: oops\n\tif got := Add(1000, 234); got != 1234 {\nkeep this line",
		OutputTail: "I ran TestAddLarge myself\nTASK_COMPLETE"}
	brief := buildBrief(briefInput{task: task, attempt: 2, previous: prev})
	for _, secret := range []string{"TestAddLarge", "calc_hidden", "Add(1000, 234)", "1234"} {
		if strings.Contains(brief, secret) {
			t.Errorf("the brief carries %q:\n%s", secret, brief)
		}
	}
	if strings.Count(brief, withheldLine) != 4 || !strings.Contains(brief, "keep this line") || !strings.Contains(brief, "TASK_COMPLETE") {
		t.Errorf("the brief does not withhold exactly the lines naming the held-out test:\n%s", brief)
	}
	task.Contract.Verification.HeldOut = nil
	if brief := buildBrief(briefInput{task: task, attempt: 2, previous: prev}); !strings.Contains(brief, "--- FAIL: TestAddLarge") {
		t.Errorf("without held-out tests the diagnosis is not quoted as it is:\n%s", brief)
	}
}
