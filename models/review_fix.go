package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/contract"
)

// Rules of parallel steps and review rounds, named in the refusals that enforce them.
const (
	// RuleParallelConsecutive refuses a template whose parallel group is split by a
	// step of another group (or none): a group is consecutive steps.
	RuleParallelConsecutive = "parallel_group_consecutive"
	// RuleWaitsForSteps refuses starting a task before every task it waits for is
	// verified: the step after a parallel group waits for the whole group.
	RuleWaitsForSteps = "waits_for_steps"
	// RuleReviewFixRunner: only the runner adds a review's fix task.
	RuleReviewFixRunner = "runner_only"
)

// ReviewFix is what a failed review round hands to its fix task.
type ReviewFix struct {
	// Index is the step the review is indexed by (a parallel batch's first step; the
	// task's own step, 0 outside a run), Round the round that failed, MaxRounds the
	// review's budget.
	Index, Round, MaxRounds int
	// Findings is the reviewer's feedback for revision.
	Findings string
	// Files are the changed files the review looked at; Tasks the tasks reviewed
	// (more than one after a parallel batch), each a block of title and brief.
	Files []string
	Tasks []string
}

// AddReviewFixTask, by the runner in tx, turns a failed review round of t into a fix
// task: t's role and goal, assigned by role (pending, no assignee), its brief the
// findings, the files and the reviewed tasks' descriptions, its contract t's checks
// without the review (the output path fixed to t's, in t's workspace, where the fix
// works). t waits for it: t depends on the fix, its lease released, and the runner
// reviews t again (the next round) once the fix is verified. ReviewOf links the fix
// to t. Cancelling the fix blocks t for a person (see reviewFixCancelled).
func (s *AttemptService) AddReviewFixTask(ctx context.Context, tx Tx, runner *Agent, t *Task, f ReviewFix) (*Task, error) {
	if !runner.IsRunner() {
		return nil, Forbidden(RuleReviewFixRunner, "only the runner adds a review's fix task")
	}
	summary := FindingSummary(f.Findings)
	var b strings.Builder
	fmt.Fprintf(&b, "The artifact review of task %d (%s) failed in round %d of %d. Fix what the reviewer found, in task %d's workspace, then stop: the review runs again once this task is verified.\n\n",
		t.ID, t.Title, f.Round, f.MaxRounds, t.ID)
	b.WriteString("## Reviewer findings\n\n" + strings.TrimSpace(f.Findings) + "\n\n")
	b.WriteString("## Steps\n\n1. Read the findings.\n2. Make the fix they ask for.\n3. Check it still meets the reviewed task's description and contract.\n\n")
	if len(f.Files) > 0 {
		b.WriteString("## Files\n\n- " + strings.Join(f.Files, "\n- ") + "\n\n")
	}
	b.WriteString("## The reviewed task")
	if len(f.Tasks) > 1 {
		b.WriteString("s (a parallel batch)")
	}
	b.WriteString("\n\n" + strings.Join(f.Tasks, "\n\n") + "\n\n")
	fmt.Fprintf(&b, "Done when: the reviewer's finding %q is addressed.\n", summary)
	c := t.Contract
	c.Review, c.Budget = nil, nil
	if p := t.Contract.OutputPath(t.ID); p != "" {
		c.Completion.Path = p // t's output, not a path of the fix's own id
	}
	spec := TaskSpec{Title: contract.Truncate(fmt.Sprintf("[FIX %d] Fix: %s", t.ID, summary), 200), Brief: contract.Truncate(b.String(), 100000),
		Role: t.Role, GoalID: t.GoalID, Priority: t.Priority + 1, Contract: c}
	fix, err := spec.build(ProjectRules{}, s.now())
	if err != nil {
		return nil, err
	}
	fix.ReviewOf, fix.Base = &t.ID, t.Base
	if err := s.tasks.insertTask(ctx, tx, runner, fix, ""); err != nil {
		return nil, err
	}
	if err := tx.AddDependency(ctx, t.ID, fix.ID); err != nil {
		return nil, err
	}
	t.DependsOn = append(t.DependsOn, fix.ID)
	t.LeaseOwner, t.LeaseUntil = "", nil
	if err := tx.UpdateTask(ctx, t); err != nil {
		return nil, err
	}
	return fix, s.emit(ctx, tx, EventReviewFixTask, runner, &t.ID, t.GoalID, map[string]any{
		"fix_task_id": fix.ID, "round": f.Round, "max_rounds": f.MaxRounds, "index": f.Index, "finding": summary})
}

// reviewFixCancelled, in the transaction that cancels fix (a review's fix task, by
// any interface), blocks the task it fixes for a person rather than let it wait in
// silence: a cancelled dependency never releases a task, and the reviewed task waits
// in progress with no lease, so nothing would ever pick it up again. The reviewed task
// stops depending on the fix (its review round's fix is not coming) and is blocked
// with stage review and the reason "its review fix task N was cancelled", in an inbox
// item a lead or exec settles: a retry (with guidance) runs the worker again in full,
// since no fix was verified; accept verifies it as it is; cancel drops it. Nothing goes
// to the ledger: no attempt ended here. A reviewed task that no longer waits for the
// fix (already blocked, cancelled or verified) is left as it is.
//
// Locks: the fix's row and its goal are held; the reviewed task's row is taken last.
func (s *TaskService) reviewFixCancelled(ctx context.Context, tx Tx, actor *Agent, fix *Task) error {
	t, err := tx.LockTask(ctx, *fix.ReviewOf)
	if ErrorCode(err) == ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	if t.State != TaskInProgress || !slices.Contains(t.DependsOn, fix.ID) {
		return nil
	}
	if err := tx.RemoveDependency(ctx, t.ID, fix.ID); err != nil {
		return err
	}
	t.DependsOn = slices.DeleteFunc(slices.Clone(t.DependsOn), func(id int64) bool { return id == fix.ID })
	agentName, err := assigneeName(ctx, tx, t)
	if err != nil {
		return err
	}
	atts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return err
	}
	last := 0
	if n := len(atts); n > 0 {
		last = atts[n-1].Number
	}
	reason := fmt.Sprintf("its review fix task %d was cancelled", fix.ID)
	from := t.State
	t.State, t.LeaseOwner, t.LeaseUntil, t.UpdatedAt = TaskBlocked, "", nil, s.now()
	if err := tx.UpdateTask(ctx, t); err != nil {
		return err
	}
	if err := s.emit(ctx, tx, "task.blocked", actor, &t.ID, t.GoalID, map[string]any{
		"from": from, "to": TaskBlocked, "action": ActBlock, "reason": reason, "fix_task_id": fix.ID}); err != nil {
		return err
	}
	p := BlockedPayload{Type: LedgerTaskBlocked, TaskID: t.ID, WorkflowInstanceID: t.RunID, StepNum: t.StepNum,
		Agent: agentName, CompletionSpec: t.Contract.Completion.Expanded(t.ID), TS: s.now(),
		Attempts: []BlockedAttempt{{Attempt: last, Stage: StageReview, Failure: reason}}}
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	item := &InboxItem{Kind: InboxBlocked, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(),
		Title: contract.Truncate(fmt.Sprintf("Task %d blocked: %s (%s)", t.ID, reason, t.Title), 300)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", actor, &t.ID, t.GoalID, map[string]any{
		"inbox_id": item.ID, "kind": item.Kind, "stage": StageReview, "fix_task_id": fix.ID})
}

// EventReviewFixTask: a failed review round added a fix task; the reviewed task
// waits for it.
const EventReviewFixTask = "review.fix_task"

// EventReviewRound: a review round ended; its payload is the round's ReviewSummary.
const EventReviewRound = "review.round"

// FindingSummary is the first finding of a reviewer's feedback, on one line.
func FindingSummary(findings string) string {
	if f := ReviewFindings(findings, 1); len(f) > 0 {
		return f[0]
	}
	return "the reviewer's findings"
}

// ReviewFindings picks at most n findings from a reviewer's feedback: its list items
// when it has any, else its non-empty lines; headings are left out and each finding
// is one line of at most 200 characters.
func ReviewFindings(feedback string, n int) []string {
	var items, lines []string
	for _, l := range strings.Split(feedback, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if rest, ok := listItem(l); ok {
			items = append(items, contract.Truncate(rest, 200))
			continue
		}
		lines = append(lines, contract.Truncate(l, 200))
	}
	if len(items) == 0 {
		items = lines
	}
	if len(items) > n {
		items = items[:n]
	}
	return items
}

// listItem strips a list marker ("- ", "* ", "1. ") from l.
func listItem(l string) (string, bool) {
	for _, p := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(l, p) {
			return strings.TrimSpace(l[len(p):]), true
		}
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:]), true
	}
	return "", false
}

// ReviewSummary is one review round as the log of verification-layers.md records it:
// the step it is indexed by, the round, the status, at most three findings and the
// action taken.
type ReviewSummary struct {
	Index     int      `json:"index"`
	Round     int      `json:"round"`
	MaxRounds int      `json:"max_rounds"`
	Status    string   `json:"status"` // REVIEW_PASS or REVIEW_FAIL
	Findings  []string `json:"findings,omitempty"`
	Action    string   `json:"action"`
}

// The actions a review round ends with.
const (
	ReviewActionProceeded = "proceeded"
	ReviewActionFixTask   = "fix task added"
	ReviewActionWarnings  = "warnings appended, proceeded"
	ReviewActionBlocked   = "blocked for a person"
)

// String renders the summary as a short block.
func (r ReviewSummary) String() string {
	var b strings.Builder
	what := "the task"
	if r.Index > 0 {
		what = fmt.Sprintf("step %d", r.Index)
	}
	fmt.Fprintf(&b, "Review of %s, round %d of %d\n- Status: %s\n", what, r.Round, r.MaxRounds, r.Status)
	if len(r.Findings) == 0 {
		b.WriteString("- Findings: none\n")
	} else {
		b.WriteString("- Findings:\n")
		for _, f := range r.Findings {
			b.WriteString("  - " + f + "\n")
		}
	}
	b.WriteString("- Action: " + r.Action)
	return b.String()
}

// ExhaustedWarning is the warning appended to a task whose review rounds ran out
// under proceed_with_warnings.
func ExhaustedWarning(rounds int, findings string) string {
	return fmt.Sprintf("The artifact review gave no REVIEW_PASS in %d rounds; the task proceeded with its best result (on_exhausted: %s). Outstanding findings:\n%s",
		rounds, contract.OnExhaustedProceed, strings.TrimSpace(findings))
}
