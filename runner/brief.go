package runner

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
)

// excerptBytes bounds the excerpt of the previous attempt's output a revision brief
// quotes: enough to recognise what went wrong, not a second log file.
const excerptBytes = 2000

// briefInput is what a worker's brief is made of.
type briefInput struct {
	task      *models.Task
	attempt   int             // this attempt's number (all attempts of the task)
	outputAbs string          // absolute output path; "" for type none
	previous  *models.Attempt // the last failed attempt this one revises; nil for a first try
	unlinked  string          // a link out of the workspace the runner removed from the output path
	approach  string          // the triage's new approach, for the one extra attempt it gave
}

// buildBrief writes the worker's brief: the task, the contract in plain words, where
// the output goes, how to say the task cannot be done as specified, and for a
// revision what failed and why. Everything in it is data
// for the worker to read on stdin; none of it ever reaches a shell.
func buildBrief(in briefInput) string {
	t := in.task
	var b strings.Builder
	fmt.Fprintf(&b, "# Task %d: %s\n\n", t.ID, t.Title)
	if brief := strings.TrimSpace(t.Brief); brief != "" {
		b.WriteString(brief + "\n\n")
	}

	if prev := in.previous; prev != nil {
		// The judge never puts a held-out test into a diagnosis; should anything else
		// quote one, the brief still does not carry it.
		held := heldOutScrubber(t.Contract.Verification.HeldOut)
		fmt.Fprintf(&b, "## Revision: attempt %d\n\n", in.attempt)
		fmt.Fprintf(&b, "Attempt %d did not pass the %s check. The exact diagnosis:\n\n", prev.Number, stageLabel(prev.Stage))
		b.WriteString(indent(held(strings.TrimSpace(prev.Diagnosis))) + "\n\n")
		if tail := held(excerpt(prev.OutputTail, excerptBytes)); tail != "" {
			fmt.Fprintf(&b, "The end of what attempt %d printed:\n\n%s\n\n", prev.Number, indent(tail))
		}
		b.WriteString("Fix exactly this and produce output that satisfies the contract below: every check runs again on this attempt.\n\n")
	}
	if answered := answeredQuestions(t.Questions); len(answered) > 0 {
		b.WriteString("## Your questions and their answers\n\n")
		for _, q := range answered {
			asked := "You asked"
			if q.Impossible {
				asked = "You said the task cannot be done as specified"
			}
			fmt.Fprintf(&b, "%s (attempt %d):\n\n%s\n\n%s answered:\n\n%s\n\n", asked, q.Attempt, indent(q.Text), q.AnsweredBy, indent(q.Answer))
		}
	}
	if in.approach != "" {
		b.WriteString("## A different approach\n\n")
		b.WriteString("Every attempt so far failed. A reviewer looked at all of them and gives you one more attempt, with this approach:\n\n")
		b.WriteString(indent(in.approach) + "\n\n")
	}
	if reason := strings.TrimSpace(t.Reason); reason != "" {
		b.WriteString("## Guidance for this attempt\n\n")
		b.WriteString("Your previous result was sent back with this reason, which you must address:\n\n")
		b.WriteString(indent(reason) + "\n\n")
	}

	if in.outputAbs != "" {
		fmt.Fprintf(&b, "## Where to write\n\nWrite your output to %s (also in $COUNTERSIGN_OUTPUT_PATH).", in.outputAbs)
		if in.unlinked != "" {
			fmt.Fprintf(&b, " The runner removed %s left there: the output must be a regular file inside the workspace.", in.unlinked)
		}
		b.WriteString("\n\n")
	}
	b.WriteString(contract.RenderContract(t.Contract, t.ID))
	b.WriteString("\n" + contract.RenderImpossible(t.Contract))
	return b.String()
}

// stageLabel names a check stage in words for the brief.
func stageLabel(stage string) string {
	switch stage {
	case models.StageProcess:
		return "process (clean exit within the time limit)"
	case models.StageContradiction:
		return "contradiction (no admission of failure next to a completion claim)"
	case models.StageDoneToken:
		return "done token"
	case models.StageMechanical:
		return "mechanical (the output the contract asks for)"
	case models.StageVerify:
		return "verification commands"
	case models.StageTamper:
		return "tamper (the checks ran with the tests restored from the base revision)"
	case models.StageWorkspace:
		return "workspace"
	case models.StageEvaluation:
		return "semantic evaluation"
	case models.StageReview:
		return "artifact review"
	}
	return stage
}

// indent quotes text as a Markdown block so a worker cannot mistake it for the
// brief's own structure.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// excerpt returns the last n bytes of s (cut on a rune boundary), trimmed.
func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "[…]\n" + s
}

// lastFailure returns the attempt a new attempt revises: the newest attempt that was
// not an infrastructure failure, if it failed. A passed newest attempt (the task came
// back through a rejection) has no diagnosis to revise; the reason is in Task.Reason.
func lastFailure(attempts []models.Attempt) *models.Attempt {
	for i := len(attempts) - 1; i >= 0; i-- {
		a := attempts[i]
		switch a.Outcome {
		case models.OutcomeInfra, models.OutcomeRunning:
			continue
		case models.OutcomeFailed:
			return &a
		}
		return nil
	}
	return nil
}

// answeredQuestions are the task's answered questions, the newest three.
func answeredQuestions(qs []models.Question) []models.Question {
	var out []models.Question
	for _, q := range qs {
		if q.AnsweredAt != nil {
			out = append(out, q)
		}
	}
	return out[max(len(out)-3, 0):]
}

// withheldLine replaces a line of a revision brief that names a held-out test.
const withheldLine = "[a line naming a held-out test is withheld]"

// heldOutScrubber returns a function that replaces every line of a text that names a
// held-out test, its file, or quotes a line of it (the distinctive ones, 16 bytes or
// more) by withheldLine; without held-out tests it returns the text as it is.
func heldOutScrubber(heldOut []contract.HeldOutTest) func(string) string {
	w := checks.NewWithholding(heldOut)
	if w == nil {
		return func(s string) string { return s }
	}
	var quoted []string
	for _, h := range heldOut {
		for _, l := range strings.Split(h.Content, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 16 {
				quoted = append(quoted, l)
			}
		}
	}
	return func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if w.Mentions(l) || slices.ContainsFunc(quoted, func(q string) bool { return strings.Contains(l, q) }) {
				lines[i] = withheldLine
			}
		}
		return strings.Join(lines, "\n")
	}
}
