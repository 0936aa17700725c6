package forgesync

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forge"
)

// body is the pull request's description: what was promised (the contract), what the
// judge found, what each attempt did and cost, and where the verification is
// recorded (the ledger entry and its attestation). It is rebuilt whenever the pull
// request points at a new commit or its status changes. Nothing in it comes from the
// worker but the task's own title and the judge's diagnoses, and it never carries a
// credential.
// state and desc are the commit's status as the caller just worked it out.
func (s *Syncer) body(ctx context.Context, tg *target, commit string, state forge.State, desc string) string {
	t := tg.task
	var b strings.Builder
	fmt.Fprintf(&b, "**Countersign: %s** — %s\n\n", state, desc)
	fmt.Fprintf(&b, "Task [%d](%s) · verified commit `%s` · branch `%s`\n\n", t.ID, s.taskURL(t.ID), commit, t.Branch)
	s.writeSteps(ctx, &b, t)
	writeContract(&b, t)
	attempts, err := s.store.ListAttempts(ctx, t.ID)
	if err != nil {
		fmt.Fprintf(&b, "_The attempts could not be read: %v_\n\n", err)
	}
	writeAttempts(&b, attempts)
	s.writeLedger(ctx, &b, t)
	b.WriteString("\nThe `countersign/verified` status is success only on the commit Countersign verified, while the verification stands. " +
		"A review requesting changes sends the task back to its worker with the reviewer's words.\n")
	return b.String()
}

// writeSteps lists the steps a chain's last task builds on: their work is in this
// pull request too, each verified on its own.
func (s *Syncer) writeSteps(ctx context.Context, b *strings.Builder, t *models.Task) {
	steps, err := s.chain(ctx, t)
	if err != nil || len(steps) == 0 {
		return
	}
	b.WriteString("### Steps in this pull request\n\n| task | title | state | verified commit |\n|---|---|---|---|\n")
	for _, st := range steps {
		fmt.Fprintf(b, "| [%d](%s) | %s | %s | `%s` |\n", st.ID, s.taskURL(st.ID), oneLine(st.Title), st.State, short(st.Commit))
	}
	fmt.Fprintf(b, "| [%d](%s) | %s | %s | `%s` |\n\n", t.ID, s.taskURL(t.ID), oneLine(t.Title), t.State, short(t.Commit))
}

func writeContract(b *strings.Builder, t *models.Task) {
	c := t.Contract
	fmt.Fprintf(b, "### Contract\n\nhash `%s` · completion `%s`", c.Hash(), c.Completion.Type)
	if t.Verify != "" {
		fmt.Fprintf(b, " · verified by `%s`", t.Verify)
	}
	b.WriteString("\n\n")
	for _, v := range c.Completion.Verify {
		fmt.Fprintf(b, "- verify: `%s`\n", oneLine(v))
	}
	for _, cr := range c.Verification.Criteria {
		fmt.Fprintf(b, "- criterion: %s\n", oneLine(cr.Activity))
	}
	b.WriteString("\n")
}

func writeAttempts(b *strings.Builder, attempts []models.Attempt) {
	if len(attempts) == 0 {
		return
	}
	b.WriteString("### Attempts\n\n| # | outcome | failed stage | metered cost |\n|---|---|---|---|\n")
	var total float64
	var known bool
	for _, a := range attempts {
		cost := "—"
		if a.Usage != nil && a.Usage.CostUSD != nil {
			source := "reported"
			if a.Usage.Source == models.UsageMetered {
				source = "metered"
			}
			cost = fmt.Sprintf("$%.4f (%s)", *a.Usage.CostUSD, source)
			total, known = total+*a.Usage.CostUSD, true
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s |\n", a.Number, a.Outcome, a.Stage, cost)
	}
	if known {
		fmt.Fprintf(b, "\nCost of all attempts: **$%.4f**\n", total)
	}
	last := attempts[len(attempts)-1]
	if last.Outcome != models.OutcomePassed {
		return
	}
	b.WriteString("\n### Judge's report\n\n")
	for _, c := range last.Checks {
		fmt.Fprintf(b, "- %s: **%s**", c.Stage, c.Verdict)
		if c.Diagnosis != "" {
			fmt.Fprintf(b, " — %s", oneLine(c.Diagnosis))
		}
		b.WriteString("\n")
	}
	for _, c := range last.Criteria {
		fmt.Fprintf(b, "- %s: **%s**\n", oneLine(c.Activity), c.Status)
	}
	if j := last.Judge; j != nil {
		fmt.Fprintf(b, "- protected paths restored: %t; protected changes: %d\n", j.Restored, len(j.Protected))
	}
	b.WriteString("\n")
}

func (s *Syncer) writeLedger(ctx context.Context, b *strings.Builder, t *models.Task) {
	e, err := s.cfg.Service.Ledger.StandingCompletion(ctx, t.ID)
	if err != nil || e == nil {
		b.WriteString("### Ledger\n\nNo standing `task.complete` entry.\n")
		return
	}
	fmt.Fprintf(b, "### Ledger\n\n`task.complete` entry %d (%s)", e.ID, e.Status)
	if e.Sequence > 0 {
		fmt.Fprintf(b, ", sequence %d", e.Sequence)
	}
	if e.TxID != "" {
		fmt.Fprintf(b, ", transaction `%s`", e.TxID)
	}
	b.WriteString("\n")
	if len(e.Attestation) > 0 {
		fmt.Fprintf(b, "\nSigned attestation: %s/api/v1/tasks/%s/attestation (also the git note `refs/notes/countersign` on the commit)\n",
			s.cfg.BaseURL, strconv.FormatInt(t.ID, 10))
	}
}

// oneLine keeps a Markdown list item on one line and bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ReplaceAll(s, "`", "'")
}
