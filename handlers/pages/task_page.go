package pages

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/task"
)

// taskPage answers GET /tasks/:id. A live re-fetch (X-Partial: 1) gets the same page;
// live.js swaps its data-live-region elements.
func (p *Pages) taskPage(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	v, err := p.taskView(c, id)
	if err != nil {
		return err
	}
	return ok(c, task.Page(*v))
}

// taskView loads the task page's model.
func (p *Pages) taskView(c echo.Context, id int64) (*task.View, error) {
	ctx := c.Request().Context()
	st := p.svc.Store()
	stored, err := st.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	// Held-out tests only for those who may set them: everyone else reads their number.
	t := handlers.TaskFor(SignedIn(c), stored)
	dir, err := p.agents(ctx)
	if err != nil {
		return nil, err
	}
	attempts, err := st.ListAttempts(ctx, id)
	if err != nil {
		return nil, err
	}
	inbox, err := st.ListInbox(ctx, models.InboxFilter{TaskID: id, IncludeResolved: true})
	if err != nil {
		return nil, err
	}
	v := &task.View{CSRF: CSRFToken(c), ID: t.ID, Title: t.Title, Brief: t.Brief, Role: t.Role, State: string(t.State), Override: t.Override,
		Contract: contract.RenderContract(t.Contract, t.ID), ContractFacts: contractFacts(t.Contract, t.ID),
		Facts: taskFacts(t, dir, len(attempts)), Agents: dir.roleOptions("— choose —", t.Role)}
	for _, h := range t.Contract.Verification.HeldOut {
		v.HeldOut = append(v.HeldOut, task.HeldOutFile{Path: h.Path, Content: h.Content})
	}
	if t.GoalID != nil {
		v.GoalID, v.GoalTitle = *t.GoalID, p.goalTitle(ctx, t.GoalID)
	}
	for _, a := range attempts {
		// The held-out tests' names and messages only for those who may read them.
		v.Attempts = append(v.Attempts, attemptView(a.ForReader(SignedIn(c)), dir))
	}
	dedupeTaskAttempts(v.Attempts, dir)
	if n := len(attempts); n > 0 {
		v.LiveText = attempts[n-1].OutputTail
		v.Running = attempts[n-1].Outcome == models.OutcomeRunning
		v.TestsChanged = attempts[n-1].Judge.ChangedTests()
	}
	for _, it := range inbox {
		v.Inbox = append(v.Inbox, task.InboxRow{ID: it.ID, Kind: it.Kind, Title: blockedTitle(it.Title), Resolved: it.Resolved, Resolution: it.Resolution})
	}
	events, truncated, err := p.taskEvents(ctx, t)
	if err != nil {
		return nil, err
	}
	v.Timeline, v.TimelineTruncated = timeline(events, dir), truncated
	if v.Hats, err = p.taskHats(ctx, stored, events, dir); err != nil {
		return nil, err
	}
	v.Deliverable = deliverableView(t.ID, attempts)
	v.Output = p.outputView(ctx, stored, attempts)
	if err := p.budgetView(ctx, SignedIn(c), stored, v); err != nil {
		return nil, err
	}
	allowed, err := p.svc.Tasks.ActionsFor(ctx, SignedIn(c), stored, models.AllowedActions(stored.State))
	if err != nil {
		return nil, err
	}
	v.Actions = actionForms(allowed)
	claimView(v, stored)
	w, err := p.svc.Queue.WaitingFor(ctx, stored)
	if err != nil {
		return nil, err
	}
	v.WaitingOn = waitingWords(w)
	v.Branch = p.branchView(ctx, SignedIn(c), stored)
	v.Review = task.ReviewOf(stored.ReviewWarnings, stored.ReviewOf)
	if v.Verification, err = p.verificationView(ctx, SignedIn(c), stored); err != nil {
		return nil, err
	}
	v.Meta = p.meta(c, fmt.Sprintf("Task #%d: %s", t.ID, t.Title), layout.NavTasks)
	v.Meta.LiveRefresh = "task:" + itoa(t.ID)
	return v, nil
}

// claimView shows t's open impossible claim and fills the amend form with t's brief,
// which a person amends from what it says now.
func claimView(v *task.View, t *models.Task) {
	for i := range v.Actions {
		if v.Actions[i].Brief {
			v.Actions[i].Values = map[string]string{"brief": t.Brief}
		}
	}
	if q := t.OpenImpossible(); q != nil {
		v.Impossible = q.Text
	}
}

// taskFacts lists the task's people, policies and last words; made is the number of
// attempts the task has (whatever their outcome).
func taskFacts(t *models.Task, dir *directory, made int) []components.DefItem {
	return append(questionFacts(t), []components.DefItem{
		{Term: "Assignee", Value: dir.name(t.AssigneeID)},
		{Term: "Builder", Value: dir.name(t.BuilderID)},
		{Term: "Approver", Value: dir.name(t.ApproverID)},
		{Term: "Verifier", Value: dir.name(t.VerifierID)},
		{Term: "Creator", Value: dir.name(&t.CreatorID)},
		{Term: "Approved by", Value: orRunner(t.Approve)},
		{Term: "Verified by", Value: orRunner(t.Verify)},
		{Term: "Attempts made", Value: strconv.Itoa(made)},
		// AttemptsUsed counts only the failures charged against the attempt budget:
		// a passed attempt, a question or an infrastructure failure is not one.
		{Term: "Failed attempts charged", Value: strconv.Itoa(t.AttemptsUsed)},
		{Term: "Verifier rejections", Value: strconv.Itoa(t.Rejections)},
		{Term: "Last reason / guidance", Value: t.Reason},
		{Term: "Summary", Value: withoutServerPath(t.Summary)},
		{Term: "Files changed", Value: t.FilesChanged},
		{Term: "Verification notes", Value: t.Notes},
		{Term: "Accepted without passing checks", Value: yes(t.Override)},
		{Term: "Depends on", Values: ids(t.DependsOn)},
		{Term: "Created", At: t.CreatedAt},
		{Term: "Updated", At: t.UpdatedAt},
	}...)
}

// questionFacts are the task's questions and answers, the open one first.
func questionFacts(t *models.Task) []components.DefItem {
	var out []components.DefItem
	if q := t.OpenQuestion(); q != nil {
		out = append(out, components.DefItem{Term: "Question waiting for an answer", Value: q.Text})
	}
	for _, q := range t.Questions {
		if q.AnsweredAt != nil {
			asked := "Asked"
			if q.Impossible {
				asked = "Said it cannot be done as specified"
			}
			out = append(out, components.DefItem{Term: asked + " (attempt " + strconv.Itoa(q.Attempt) + ")", Value: q.Text},
				components.DefItem{Term: "Answered by " + q.AnsweredBy, Value: q.Answer})
		}
	}
	return out
}

func orRunner(p models.Policy) string {
	if p == "" {
		return models.PolicyRunner
	}
	return p
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

func ids(list []int64) []string {
	out := make([]string, 0, len(list))
	for _, id := range list {
		out = append(out, "task #"+itoa(id))
	}
	return out
}

// contractFacts lists the key fields of the normalised contract
// (contract.Contract.Normalized: an unset type, path, attempt budget or timeout shown
// as the value the checks apply), paths expanded for task id.
func contractFacts(ct contract.Contract, id int64) []components.DefItem {
	ct = ct.Normalized()
	cp, vf := ct.Completion.Expanded(id), ct.Verification
	items := []components.DefItem{
		{Term: "Completion", Value: string(cp.Type)},
		{Term: "Output path", Value: cp.Path, Mono: true},
		{Term: "Minimum length", Value: positive(cp.MinLength)},
		{Term: "Signal", Value: cp.Signal, Mono: true},
		{Term: "Done token", Value: cp.DoneToken, Mono: true},
		{Term: "Verify commands", Values: cp.Verify, Mono: true},
		{Term: "Evaluation", Value: cp.Evaluate},
		{Term: "Attempt budget", Value: positive(cp.MaxAttempts)},
		{Term: "Timeout", Value: dur(cp.Timeout.Duration)},
		{Term: "Verification", Value: string(vf.Type)},
	}
	switch vf.Workspace {
	case contract.WorkspacePending, contract.WorkspacePendingCommands:
		items = append(items, components.DefItem{Term: "Stacks", Value: "from the workspace, before the first attempt"})
	case contract.WorkspaceDetected:
		stacks := strings.Join(vf.Stacks, ", ")
		if stacks == "" {
			stacks = "none recognised: no stack commands"
		}
		items = append(items, components.DefItem{Term: "Stacks", Value: stacks})
	}
	var crit []string
	for _, c := range vf.Criteria {
		s := c.Activity
		if c.Description != "" {
			s += ": " + c.Description
		}
		crit = append(crit, s)
	}
	items = append(items, components.DefItem{Term: "Criteria", Values: crit},
		components.DefItem{Term: "Protected paths", Values: vf.Protect, Mono: true})
	if vf.TestsMayChange {
		items = append(items, components.DefItem{Term: "Tests may change", Value: "yes: the checks run on the worker's tests, not the base revision's"})
	}
	if vf.DependenciesMayChange {
		items = append(items, components.DefItem{Term: "Dependencies may change", Value: "yes: the checks install the worker's dependencies and report those that changed"})
	}
	switch {
	case len(vf.HeldOut) > 0:
		paths := make([]string, len(vf.HeldOut))
		for i, h := range vf.HeldOut {
			paths[i] = h.Path
		}
		items = append(items, components.DefItem{Term: "Held-out tests", Values: paths, Mono: true})
	case vf.HeldOutCount > 0:
		items = append(items, components.DefItem{Term: "Held-out tests",
			Value: fmt.Sprintf("%d, hidden: only admins, editors and leads read them", vf.HeldOutCount)})
	}
	if ct.Review != nil {
		items = append(items, components.DefItem{Term: "Artifact review by", Value: ct.Review.Role})
	}
	return items
}

func positive(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func dur(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

func ms(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " ms"
	}
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// attemptView turns an attempt into its view.
func attemptView(a models.Attempt, dir *directory) task.Attempt {
	out := task.Attempt{Number: a.Number, Agent: dir.name(&a.AgentID), Outcome: a.Outcome, Stage: a.Stage,
		Diagnosis: a.Diagnosis, ExitCode: a.ExitCode, StartedAt: a.StartedAt, OutputTail: a.OutputTail}
	if a.FinishedAt != nil {
		out.Duration = ms(a.FinishedAt.Sub(a.StartedAt).Milliseconds())
	}
	for _, ch := range a.Checks {
		out.Checks = append(out.Checks, task.Check{Stage: ch.Stage, Verdict: ch.Verdict, Diagnosis: ch.Diagnosis, Duration: ms(ch.DurationMS)})
	}
	for _, cr := range a.Criteria {
		out.Criteria = append(out.Criteria, task.Criterion{Activity: cr.Activity, Command: cr.Command, Status: cr.Status,
			Error: cr.Error, Attempts: cr.Attempts, Duration: ms(cr.DurationMS)})
	}
	out.Judge = judgeView(a.Judge)
	if a.Usage != nil {
		out.Usage, out.UsageNote = a.Usage.Summary(), a.Usage.Note
	}
	out.UsageCompare, out.Network = usageCompareView(a.Usage), networkView(a.Network)
	return out
}

// judgeView turns the judge's report into its view (nil for none).
func judgeView(r *models.JudgeReport) *task.Judge {
	if r == nil {
		return nil
	}
	j := &task.Judge{Base: r.Base, Restored: r.Restored, Dependencies: r.Dependencies}
	if r.PrepareMS > 0 {
		j.Prepare = ms(r.PrepareMS)
	}
	for _, c := range r.Protected {
		j.Protected = append(j.Protected, task.ProtectedChange{Path: c.Path, Change: c.Change, Parts: c.Parts, Diff: c.Diff})
	}
	if f := r.Floor; f != nil {
		j.Floor = &task.Floor{AtBase: f.AtBase, Run: f.Run, Passed: f.Passed, Skipped: f.Skipped, Missing: f.Missing,
			Failed: f.Failed, NotRun: f.NotRun, OK: f.OK}
	}
	if h := r.HeldOut; h != nil {
		j.HeldOut = &task.HeldOutResult{Files: h.Files, Passed: h.Passed, FailedCount: max(h.FailedCount, len(h.Failed)), Failed: h.Failed, Detail: h.Detail}
	}
	return j
}

// timeline turns a task's events into timeline entries.
func timeline(events []models.Event, dir *directory) []components.TimelineItem {
	out := make([]components.TimelineItem, 0, len(events))
	for _, e := range events {
		var d struct {
			From, To, Action, Reason, Notes, Summary, Agent, Resolution string
		}
		_ = json.Unmarshal(e.Data, &d)
		it := components.TimelineItem{At: e.CreatedAt, Title: e.Type, Actor: hatActor(e, dir.name(e.ActorID), dir), State: d.To}
		if d.From != "" && d.To != "" {
			it.Title = e.Type + ": " + components.StateLabel(d.From) + " → " + components.StateLabel(d.To)
		}
		var parts []string
		for _, kv := range [][2]string{{"agent", d.Agent}, {"reason", d.Reason}, {"notes", d.Notes}, {"summary", withoutServerPath(d.Summary)}, {"resolution", d.Resolution}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+": "+kv[1])
			}
		}
		it.Body = strings.Join(parts, "\n")
		out = append(out, it)
	}
	return out
}
