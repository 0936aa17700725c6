package checks

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
)

// DefaultContradictionPhrases are the admissions of failure that, next to a
// completion claim, make the claim a contradiction (verification-layers.md, layer 1).
var DefaultContradictionPhrases = []string{
	"requires manual",
	"cannot be automated",
	"could not complete",
	"needs human",
	"manual intervention",
}

// DefaultClaimTokens are the words that count as a claim of completion when the
// caller gives none: the conventional done tokens and the plain word "done".
var DefaultClaimTokens = []string{"TASK_COMPLETE", "TASK_DONE", "done"}

// ClaimTokens returns DefaultClaimTokens plus the contract's done token (when set and
// not already listed): what the runner passes to Contradiction.
func ClaimTokens(doneToken string) []string {
	out := append([]string(nil), DefaultClaimTokens...)
	doneToken = strings.TrimSpace(doneToken)
	if doneToken == "" {
		return out
	}
	for _, t := range out {
		if strings.EqualFold(t, doneToken) {
			return out
		}
	}
	return append(out, doneToken)
}

// Contradiction fails when the output both claims completion (one of claimTokens,
// matched case-insensitively as a whole token, so "done" does not match "abandoned")
// and admits failure (one of phrases, a case-insensitive substring with runs of
// whitespace treated as one space). The claim and the admission may be anywhere in
// the output, as in the seed: a worker that says it is done while saying a part needs
// a person has not finished. The diagnosis quotes the first admission found, the
// claim, and the line the admission is on.
//
// Empty claimTokens means DefaultClaimTokens; empty phrases means
// DefaultContradictionPhrases. Without a claim the check passes: a missing done
// token is DoneToken's business.
func Contradiction(output string, claimTokens []string, phrases []string) models.CheckResult {
	start := time.Now()
	if len(claimTokens) == 0 {
		claimTokens = DefaultClaimTokens
	}
	if len(phrases) == 0 {
		phrases = DefaultContradictionPhrases
	}
	lower := strings.ToLower(output)

	claim := ""
	for _, t := range claimTokens {
		t = strings.TrimSpace(t)
		if t != "" && indexToken(lower, strings.ToLower(t)) >= 0 {
			claim = t
			break
		}
	}
	if claim == "" {
		return result(models.StageContradiction, models.VerdictPass, "", start)
	}

	// Scan line by line so the diagnosis can name the line; a phrase is matched on a
	// whitespace-normalised copy of the line.
	for n, line := range strings.Split(output, "\n") {
		norm := strings.ToLower(strings.Join(strings.Fields(line), " "))
		for _, p := range phrases {
			p = strings.ToLower(strings.Join(strings.Fields(p), " "))
			if p == "" || !strings.Contains(norm, p) {
				continue
			}
			return result(models.StageContradiction, models.VerdictFail, fmt.Sprintf(
				"the output claims completion (%q) while admitting failure: %q on line %d: %s; "+
					"finish that part yourself, or do not claim completion",
				claim, p, n+1, quoteLine(line, 240)), start)
		}
	}
	return result(models.StageContradiction, models.VerdictPass, "", start)
}
