package contract

import (
	"encoding/json"
	"fmt"
	"strings"
)

// activityLabels name well-known activities in briefs.
var activityLabels = map[string]string{
	"unit-test":          "Unit tests",
	"typecheck":          "Type check",
	"lint":               "Lint",
	"e2e":                "End-to-end tests",
	"frontend-test":      "Front-end unit tests",
	"frontend-typecheck": "TypeScript type check",
	"docs":               "Documentation check",
	"vet":                "Vet",
	"format":             "Formatting",
}

// NoProtocolMessages is the instruction every worker brief ends with: the runner, not
// the worker, records completions (completion-verification.md).
const NoProtocolMessages = "Do not post any completion or protocol messages (task.complete, task.blocked, status updates): the runner checks your work against this contract and records the result."

// RenderContract describes the contract in plain words for the worker's brief: where
// to write the output (the path expanded for taskID, relative to the working
// directory) and what it must contain, the done token to print, the commands that
// must exit 0, the evaluation criteria, the verification criteria as a numbered list
// with activity, description and timing, the review, the budget, and the instruction
// not to post protocol messages. It is Markdown-flavoured text without raw JSON, except
// the example of the signal file a signal contract asks for. It renders the
// normalised contract (Contract.Normalized), so unset values are shown with their
// defaults.
func RenderContract(c Contract, taskID int64) string {
	n := c.Normalized()
	var b strings.Builder
	b.WriteString("## What done looks like\n\n")
	renderCompletion(&b, n, taskID)
	b.WriteString("\n## Verification contract\n\n")
	renderVerification(&b, n.Verification)
	if r := n.Review; r != nil {
		fmt.Fprintf(&b, "\nA reviewer with the role %s will review your work (at most %d rounds).\n", r.Role, r.MaxRounds)
	}
	fmt.Fprintf(&b, "\nTime limit: %s per attempt. ", formatDuration(n.Completion.Timeout.Duration))
	if attempts := n.Completion.MaxAttempts; attempts > 1 {
		fmt.Fprintf(&b, "If a check fails you will be told exactly why and get another attempt (%d attempts in all).\n", attempts)
	} else {
		b.WriteString("There is one attempt.\n")
	}
	b.WriteString("\n" + NoProtocolMessages + "\n")
	return b.String()
}

// renderCompletion writes what the completion contract n (normalised) asks for.
func renderCompletion(b *strings.Builder, n Contract, taskID int64) {
	cp := n.Completion
	out := n.OutputPath(taskID)
	switch cp.Type {
	case CompletionFile:
		fmt.Fprintf(b, "- Write your output to `%s` (relative to your working directory). ", out)
		if cp.MinLength > 0 {
			fmt.Fprintf(b, "It must not be empty and must be at least %d bytes long.\n", cp.MinLength)
		} else {
			b.WriteString("It must not be empty.\n")
		}
	case CompletionSignal:
		example, _ := json.Marshal(struct {
			Signal    string `json:"signal"`
			Reasoning string `json:"reasoning"`
		}{cp.Signal, "why you decided so"})
		fmt.Fprintf(b, "- Write a JSON file to `%s` (relative to your working directory) whose \"signal\" field is exactly %q, for example:\n\n", out, cp.Signal)
		fmt.Fprintf(b, "      %s\n\n", example)
	default:
		b.WriteString("- No output file is checked: finishing cleanly (exit status 0) completes the mechanical check.\n")
	}
	if cp.DoneToken != "" {
		fmt.Fprintf(b, "- When, and only when, the work is complete, print `%s` on a line of its own.\n", cp.DoneToken)
	}
	if len(cp.Verify) > 0 {
		fmt.Fprintf(b, "- These commands must exit with status 0 in your working directory (at most %s each):\n", formatDuration(cp.VerifyTimeout.Duration))
		for _, cmd := range cp.Verify {
			fmt.Fprintf(b, "    - `%s`\n", cmd)
		}
	}
	if cl := cp.Checklist; cl != nil {
		fmt.Fprintf(b, "- The Markdown file `%s` must have at least %d checked boxes (`- [x]`).\n", expandTaskID(cl.Path, taskID), cl.Count)
	}
	if cp.Clean {
		b.WriteString("- Commit your changes: the workspace must have no uncommitted changes when you finish.\n")
	}
	if cp.Evaluate != "" {
		b.WriteString("- An evaluator will read your output against these criteria:\n")
		for _, line := range strings.Split(cp.Evaluate, "\n") {
			fmt.Fprintf(b, "    > %s\n", strings.TrimRight(line, " \t"))
		}
	}
}

// renderVerification writes how the verification contract v (normalised) checks the
// work: the stacks recognised, the criteria, and how the tests are held.
func renderVerification(b *strings.Builder, v Verification) {
	if v.Type != VerifyAdvisory {
		switch {
		case v.Workspace == WorkspaceDetected && len(v.Stacks) > 0:
			fmt.Fprintf(b, "Your workspace was recognised as: %s. The checks below were chosen for it.\n\n", strings.Join(v.Stacks, ", "))
		case v.Workspace == WorkspaceDetected:
			b.WriteString("No language stack (Go, Node, Python, Rust, a Makefile test target) was recognised in your workspace, so no test commands were added.\n\n")
		case v.Workspace == WorkspacePending || v.Workspace == WorkspacePendingCommands:
			b.WriteString("The checks for the stacks recognised in your workspace are added before your first attempt.\n\n")
		}
	}
	switch {
	case v.Type == VerifyAdvisory:
		b.WriteString("This task is advisory: no automated checks; your output goes to a person for review. Make it clear, complete and easy to act on.\n")
	case len(v.Criteria) == 0 && v.Type == VerifySkip:
		b.WriteString("Only minimal checks apply to this task.\n")
	case len(v.Criteria) == 0:
		b.WriteString("No verification criteria beyond the checks above.\n")
	default:
		if v.Type == VerifySkip {
			b.WriteString("Only minimal checks apply to this task. ")
		}
		b.WriteString("Your work will be verified by:\n\n")
		for i, cr := range v.Criteria {
			renderCriterion(b, i, cr)
		}
		b.WriteString("\nWrite your work knowing these criteria will be checked.\n")
	}
	if v.Type != VerifyAdvisory {
		b.WriteString(judgeNote(v))
	}
}

// renderCriterion writes criterion i as an item of a numbered list.
func renderCriterion(b *strings.Builder, i int, cr Criterion) {
	label := activityLabels[cr.Activity]
	if label == "" {
		label = cr.Activity
	}
	fmt.Fprintf(b, "%d. **%s** (%s) — %s", i+1, label, cr.Activity, cr.Description)
	var notes []string
	if cr.Pattern != "" {
		notes = append(notes, fmt.Sprintf("tests matching %q", cr.Pattern))
	}
	switch cr.Timing {
	case TimingImmediate:
		notes = append(notes, "runs immediately after your attempt")
	case TimingDeferred:
		notes = append(notes, "runs later, with the integrated result")
	}
	if cr.Command != "" {
		notes = append(notes, fmt.Sprintf("checked with `%s`", cr.Command))
	}
	if len(notes) > 0 {
		b.WriteString("; " + strings.Join(notes, "; "))
	}
	b.WriteString("\n")
}

func expandTaskID(p string, taskID int64) string {
	return strings.ReplaceAll(p, TaskIDPlaceholder, fmt.Sprint(taskID))
}

// judgeNote tells the worker, before it starts, how the tests that judge it are held:
// the protected paths restored, the floor, and how many tests are held out (never
// which).
func judgeNote(v Verification) string {
	var b strings.Builder
	if v.TestsMayChange {
		b.WriteString("\nThis task may change tests. Every change to a test file or test configuration is reported, and every test that passed before your change must still run and pass.\n")
	} else {
		b.WriteString("\nThe tests belong to the checks, not to you: the checks run on your result with the test files and test configuration (")
		b.WriteString(strings.Join(append([]string{"the stacks' test files"}, v.Protect...), ", "))
		b.WriteString(") as they were when the task was delegated, so changing, adding or deleting them changes nothing the checks see, and every such change is reported. Every test that passed before must still run and pass.\n")
	}
	if v.DependenciesMayChange {
		b.WriteString("You may change the project's dependencies: the checks install them from your manifests and lockfiles, and every dependency you changed is reported.\n")
	} else {
		b.WriteString("The project's dependencies (lockfiles, dependency lists, vendored code) are fixed: the checks use them as they were when the task was delegated.\n")
	}
	if n := len(v.HeldOut) + v.HeldOutCount; n > 0 {
		fmt.Fprintf(&b, "%d further test file(s) that you cannot see are run too: make the code right in general, not for the visible cases.\n", n)
	}
	return b.String()
}

// ImpossiblePrefix starts the last output line of a worker that says its task cannot
// be done as specified (`IMPOSSIBLE: <reason>`); the runner reads it.
const ImpossiblePrefix = "IMPOSSIBLE:"

// ImpossibleField is the signal file's field (completion type signal) that says the
// same: a non-empty string, the reason, e.g. {"impossible": "the tests contradict the
// brief"}. It outweighs the "signal" field beside it.
const ImpossibleField = "impossible"

// RenderImpossible tells a worker how to say that its task cannot be done as
// specified (the last line, or for a signal contract the signal file's field), that
// saying so is not a failure, and that gaming the checks is. Every worker brief ends
// with it; a reviewer's does not, as a reviewer judges work rather than doing it.
func RenderImpossible(c Contract) string {
	var b strings.Builder
	b.WriteString("## If the task cannot be done as specified\n\n")
	b.WriteString("If the task cannot be done as it is specified (for example, the tests contradict the brief), stop and say so: ")
	fmt.Fprintf(&b, "make the last line of your output `%s <the reason>`", ImpossiblePrefix)
	if n := c.Normalized(); n.Completion.Type == CompletionSignal {
		example, _ := json.Marshal(map[string]string{ImpossibleField: "the reason"})
		fmt.Fprintf(&b, ", or write the reason in the signal file's %q field (`%s`)", ImpossibleField, example)
	}
	b.WriteString(". Saying so is not a failure: a person reads your reason and amends the task, answers you or cancels it. ")
	b.WriteString("Changing the tests or special-casing the checks to make them pass is a failure.\n")
	return b.String()
}
