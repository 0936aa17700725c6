package checks

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// The reviewer's signals and the verdicts ParseReviewSignal derives from them.
const (
	ReviewPassSignal = "REVIEW_PASS"
	ReviewFailSignal = "REVIEW_FAIL"

	ReviewPass = "pass" // REVIEW_PASS on the last line
	ReviewFail = "fail" // REVIEW_FAIL on the last line
	ReviewNone = "none" // neither: the reviewer gave no verdict
)

// DefaultReviewEvery is the "every" interval when the contract asks for it but sets
// no number: every fifth task, as in verification-layers.md. (The contract's
// Normalize fills no every, so this default has no home there yet.)
const DefaultReviewEvery = 5

// ParseReviewSignal reads the reviewer's verdict from the last non-empty line of its
// output: ReviewPass when it carries REVIEW_PASS, ReviewFail when it carries
// REVIEW_FAIL (either as a token of its own, so "**REVIEW_FAIL**" counts; both on one
// line is a fail), ReviewNone otherwise. feedback is what the reviewer wrote for the
// revision: the text under a "Feedback for Revision" heading when there is one, else
// the whole output without the signal line, trimmed.
func ParseReviewSignal(output string) (verdict string, feedback string) {
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	last := len(lines) - 1
	for last >= 0 && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	verdict = ReviewNone
	body := lines
	if last >= 0 {
		line := lines[last]
		switch {
		case indexToken(line, ReviewFailSignal) >= 0:
			verdict = ReviewFail
		case indexToken(line, ReviewPassSignal) >= 0:
			verdict = ReviewPass
		}
		if verdict != ReviewNone {
			body = lines[:last]
		}
	}
	for i, l := range body {
		h := strings.ToLower(strings.Trim(strings.TrimSpace(l), "#*_: "))
		if h == "feedback for revision" {
			if fb := strings.TrimSpace(strings.Join(body[i+1:], "\n")); fb != "" {
				return verdict, fb
			}
		}
	}
	return verdict, strings.TrimSpace(strings.Join(body, "\n"))
}

// ReviewOutcome is what the runner does after one review round.
type ReviewOutcome struct {
	// Check is the review layer's result for this round: pass only on REVIEW_PASS.
	Check models.CheckResult
	// Again reports that the round failed and rounds remain: the runner creates a fix
	// task from the feedback and reviews again. A failed round with Again false means
	// the rounds are used up and the task does not pass.
	Again bool
}

// ReviewDecision turns the verdict of review round `round` (1-based) of at most
// maxRounds (the normalised contract's max_rounds; contract.MaxReviewRounds when
// <= 0) into the review layer's result.
//
// Deliberate choice: verification-layers.md treats a reviewer that prints neither
// signal as a pass ("permissive"), and lets the work through with warnings once the
// rounds are used up. DESIGN.md's rule wins over both: when a checker cannot give a
// verdict the task never passes (fail closed), and nothing is done until someone
// other than the doer has checked it. So "no signal" is a failed round, counted like
// REVIEW_FAIL, and a task whose rounds run out without REVIEW_PASS fails the review
// layer and goes to a person with the last feedback.
func ReviewDecision(verdict, feedback string, round, maxRounds int) ReviewOutcome {
	start := time.Now()
	if maxRounds <= 0 {
		maxRounds = contract.MaxReviewRounds
	}
	if verdict == ReviewPass {
		return ReviewOutcome{Check: result(models.StageReview, models.VerdictPass, "", start)}
	}
	var diag string
	if verdict == ReviewFail {
		diag = fmt.Sprintf("review round %d of %d: the reviewer answered %s", round, maxRounds, ReviewFailSignal)
	} else {
		diag = fmt.Sprintf("review round %d of %d: the reviewer gave no %s or %s on its last line; treated as a failed round (fail closed)",
			round, maxRounds, ReviewPassSignal, ReviewFailSignal)
	}
	again := round < maxRounds
	if !again {
		diag += fmt.Sprintf("; no review rounds left after %d", maxRounds)
	}
	if fb := strings.TrimSpace(feedback); fb != "" {
		diag += "\nFeedback for revision:\n" + fb
	}
	return ReviewOutcome{Check: result(models.StageReview, models.VerdictFail, diag, start), Again: again}
}

// ReviewDue reports whether the artifact review runs for the task at taskIndex
// (0-based) of totalTasks, given the contract's triggers:
//
//   - "always": every task;
//   - "phase": phaseChanged, i.e. the first task of a new phase;
//   - "every": taskIndex % every == 0 (every <= 0 means DefaultReviewEvery);
//   - "final": the last task, taskIndex == totalTasks-1.
//
// when is normally the normalised contract's; no triggers at all mean the contract's
// default (contract.Contract.Normalized: always), never one of the runner's own.
// Triggers are case-insensitive; unknown ones are ignored.
func ReviewDue(when []string, every, taskIndex, totalTasks int, phaseChanged bool) bool {
	if len(when) == 0 {
		when = contract.Contract{Review: &contract.Review{}}.Normalized().Review.When
	}
	if every <= 0 {
		every = DefaultReviewEvery
	}
	for _, w := range when {
		switch strings.ToLower(strings.TrimSpace(w)) {
		case "always":
			return true
		case "phase":
			if phaseChanged {
				return true
			}
		case "every":
			if taskIndex >= 0 && taskIndex%every == 0 {
				return true
			}
		case "final":
			if totalTasks > 0 && taskIndex == totalTasks-1 {
				return true
			}
		}
	}
	return false
}
