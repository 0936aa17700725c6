package checks

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestExpectedFailures: a results command that exits with status 1 because only the
// judge's must-fail canary failed passes, and the canary reaches no diagnosis; any
// other failure, another exit status, or no canary expectation fails as before.
func TestExpectedFailures(t *testing.T) {
	tap := func(lines ...string) string {
		return "printf '" + strings.Join(append([]string{"TAP version 13"}, lines...), `\n`) + `\n'`
	}
	canary := "not ok 1 - canary N must fail"
	cases := []struct {
		name, command string
		expect        bool
		verdict       string
		diag          string
	}{
		{"only the canary", tap(canary, "ok 2 - adds") + "; test \"$COUNTERSIGN_CANARY\" = N && exit 1", true, models.VerdictPass, ""},
		{"switched off", tap(canary, "ok 2 - adds") + "; exit 1", false, models.VerdictFail, "canary N must fail"},
		{"another failure", tap(canary, "not ok 2 - adds") + "; exit 1", true, models.VerdictFail, "adds failed"},
		{"a crash", tap(canary, "ok 2 - adds") + "; exit 2", true, models.VerdictFail, "status 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := VerifyRequest{Dir: t.TempDir(), Criteria: []contract.Criterion{{Activity: "unit-test"}},
				ActivityCommands: map[string]string{"unit-test": "true"},
				Results:          map[int]contract.TestResults{0: {Format: contract.ResultsTAP, Command: c.command}}}
			if c.expect {
				req.Expect = &ExpectedFailures{Env: []string{"COUNTERSIGN_CANARY=N"}, Fail: func(n string) bool { return strings.Contains(n, "canary N must fail") }}
			}
			res, _, runs := VerifyWith(context.Background(), req)
			if res.Verdict != c.verdict || !strings.Contains(res.Diagnosis, c.diag) || len(runs) != 1 {
				t.Fatalf("verdict %s, want %s; diagnosis %q, want it to hold %q", res.Verdict, c.verdict, res.Diagnosis, c.diag)
			}
			// The command's text holds the canary here; what follows it must not.
			if _, after, _ := strings.Cut(res.Diagnosis, " exited with "); c.expect && strings.Contains(after, "canary") {
				t.Errorf("the canary reached the diagnosis: %s", res.Diagnosis)
			}
		})
	}
}
