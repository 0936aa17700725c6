package checks

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

func TestParseReviewSignal(t *testing.T) {
	cases := []struct {
		name, output, verdict, feedback string
	}{
		{"pass", "Looks good.\nREVIEW_PASS\n\n", ReviewPass, "Looks good."},
		{"fail with feedback section", "## Findings\n- bug\n## Feedback for Revision\nFix the null check in a.go:12\n**REVIEW_FAIL**\n", ReviewFail, "Fix the null check in a.go:12"},
		{"fail without section", "a.go:12 misses the null check\nVerdict: REVIEW_FAIL", ReviewFail, "a.go:12 misses the null check"},
		{"signal not on the last line", "REVIEW_PASS\nbut then more text", ReviewNone, "REVIEW_PASS\nbut then more text"},
		{"empty", "", ReviewNone, ""},
		{"both on the line is a fail", "REVIEW_PASS? no: REVIEW_FAIL", ReviewFail, ""},
		{"crlf", "ok\r\nREVIEW_PASS\r\n", ReviewPass, "ok"},
		{"not a token", "REVIEW_PASSED", ReviewNone, "REVIEW_PASSED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, fb := ParseReviewSignal(c.output)
			if v != c.verdict || fb != c.feedback {
				t.Errorf("ParseReviewSignal(%q) = %q, %q; want %q, %q", c.output, v, fb, c.verdict, c.feedback)
			}
		})
	}
}

func TestReviewDecision(t *testing.T) {
	o := ReviewDecision(ReviewPass, "", 1, 3)
	wantVerdict(t, o.Check, models.StageReview, models.VerdictPass)
	if o.Again {
		t.Error("a pass asks for another round")
	}

	o = ReviewDecision(ReviewFail, "fix a.go:12", 1, 3)
	wantVerdict(t, o.Check, models.StageReview, models.VerdictFail, "review round 1 of 3", "REVIEW_FAIL", "Feedback for revision:\nfix a.go:12")
	if !o.Again {
		t.Error("round 1 of 3 failed but no further round")
	}

	o = ReviewDecision(ReviewFail, "still broken", 3, 3)
	wantVerdict(t, o.Check, models.StageReview, models.VerdictFail, "no review rounds left after 3", "still broken")
	if o.Again {
		t.Error("further round after the last")
	}

	// No signal fails closed and counts as a round.
	o = ReviewDecision(ReviewNone, "", 2, 0)
	wantVerdict(t, o.Check, models.StageReview, models.VerdictFail, "review round 2 of 3", "no REVIEW_PASS or REVIEW_FAIL", "fail closed")
	if !o.Again || strings.Contains(o.Check.Diagnosis, "Feedback") {
		t.Errorf("outcome = %+v", o)
	}
	o = ReviewDecision("garbage", "", 1, 1)
	wantVerdict(t, o.Check, models.StageReview, models.VerdictFail, "fail closed", "no review rounds left")
}

func TestReviewDue(t *testing.T) {
	cases := []struct {
		name         string
		when         []string
		every, idx   int
		total        int
		phaseChanged bool
		want         bool
	}{
		{"always", []string{"always"}, 0, 3, 10, false, true},
		{"phase changed", []string{"phase"}, 0, 3, 10, true, true},
		{"phase same", []string{"phase"}, 0, 3, 10, false, false},
		{"every 2 hit", []string{"every"}, 2, 4, 10, false, true},
		{"every 2 miss", []string{"every"}, 2, 3, 10, false, false},
		{"every default 5", []string{"EVERY"}, 0, 5, 10, false, true},
		{"every default 5 miss", []string{"every"}, 0, 4, 10, false, false},
		{"final hit", []string{"final"}, 0, 9, 10, false, true},
		{"final miss", []string{"final"}, 0, 8, 10, false, false},
		{"final unknown total", []string{"final"}, 0, 0, 0, false, false},
		// No triggers: the contract's default, always (contract.Contract.Normalized),
		// not the phase/every/final the runner once applied on its own (issue #32).
		{"default: first task", nil, 0, 0, 10, false, true},
		{"default: plain task", nil, 0, 3, 10, false, true},
		{"default: phase", nil, 0, 3, 10, true, true},
		{"default: final", nil, 0, 7, 8, false, true},
		{"unknown trigger", []string{"sometimes"}, 0, 0, 1, true, false},
	}
	for _, c := range cases {
		if got := ReviewDue(c.when, c.every, c.idx, c.total, c.phaseChanged); got != c.want {
			t.Errorf("%s: ReviewDue = %v, want %v", c.name, got, c.want)
		}
	}
}
