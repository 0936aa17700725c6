package pages

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/inbox"
)

// inboxKinds orders the inbox groups.
var inboxKinds = []struct{ kind, label string }{
	{models.InboxBlocked, "Blocked tasks"},
	{models.InboxEscalation, "Escalations"},
	{models.InboxAdvisory, "Advisory outputs to look at"},
	{models.InboxAgentPaused, "Paused agents"},
	{models.InboxBudget, "Budget warnings"},
	{models.InboxDrift, "Verified work that changed"},
	{models.InboxQuestion, "Questions from workers"},
	{models.InboxAdvisoryPrompt, "Advisory tasks waiting before delegation"},
}

// actCheckAgain names the inbox form that checks a task blocked as not ready again: a
// retry without guidance (POST /tasks/:id/action/retry with no reason), which runs the
// readiness check again and, once ready, the task.
const actCheckAgain = "check-again"

// actRaiseBudget names the inbox form that raises the budget of a task a budget
// stopped, which resumes it.
const actRaiseBudget = "raise-budget"

// inboxActions are the resolving actions the inbox offers, in display order.
var inboxActions = []models.Action{models.ActAnswer, models.ActAmend, models.ActRetry, models.ActReassign, models.ActAccept, models.ActCancel}

// inboxPage answers GET /inbox.
func (p *Pages) inboxPage(c echo.Context) error {
	v, err := p.inboxView(c)
	if err != nil {
		return err
	}
	return ok(c, inbox.Page(*v))
}

// inboxView loads the open inbox items (at most 200), their tasks and their forms.
func (p *Pages) inboxView(c echo.Context) (*inbox.View, error) {
	ctx := c.Request().Context()
	st := p.svc.Store()
	items, err := st.ListInbox(ctx, models.InboxFilter{Limit: 200})
	if err != nil {
		return nil, err
	}
	dir, err := p.agents(ctx)
	if err != nil {
		return nil, err
	}
	taskIDs := make([]int64, 0, len(items))
	for _, it := range items {
		taskIDs = append(taskIDs, it.TaskID)
	}
	var tasks []models.Task
	if len(taskIDs) > 0 {
		if tasks, err = st.GetTasks(ctx, taskIDs); err != nil {
			return nil, err
		}
	}
	byID := map[int64]*models.Task{}
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
	}
	me := SignedIn(c)
	v := &inbox.View{CSRF: CSRFToken(c), Total: len(items)}
	for _, k := range inboxKinds {
		g := inbox.Group{Kind: k.kind, Label: k.label}
		for _, it := range items {
			if it.Kind != k.kind {
				continue
			}
			item := inboxItem(it, byID[it.TaskID], me, dir)
			item.Agents = dir.options("— choose —")
			if t := byID[it.TaskID]; t != nil {
				item.Agents = dir.roleOptions("— choose —", t.Role)
			}
			p.dueView(&item, &it, time.Now())
			if t := byID[it.TaskID]; t != nil && it.Kind == models.InboxAdvisory {
				if item.Output, err = p.advisoryOutput(c, t); err != nil {
					return nil, err
				}
			}
			g.Items = append(g.Items, item)
		}
		if len(g.Items) > 0 {
			v.Groups = append(v.Groups, g)
		}
	}
	v.Meta = p.meta(c, "Inbox", layout.NavInbox)
	v.Meta.LiveRefresh = "any"
	return v, nil
}

// inboxItem builds one item: the blocked payload's exact criteria and attempts, or
// the escalation's and advisory output's details, and the forms me may try (for an
// advisory item, Dismiss).
func inboxItem(it models.InboxItem, t *models.Task, me *models.Agent, dir *directory) inbox.Item {
	out := inbox.Item{ID: it.ID, Kind: it.Kind, Title: it.Title, CreatedAt: it.CreatedAt, TaskID: it.TaskID}
	if it.GoalID != nil {
		out.GoalID = *it.GoalID
	}
	switch it.Kind {
	case models.InboxBlocked:
		var bp models.BlockedPayload
		if json.Unmarshal(it.Payload, &bp) == nil {
			out.Agent = bp.Agent
			out.Criteria = completionFacts(bp.CompletionSpec)
			out.Missing = bp.Missing
			out.Triage = triageView(bp.Triage)
			for _, a := range bp.Attempts {
				out.BudgetStop = out.BudgetStop || a.Stage == models.StageBudget
				if a.Stage == models.StageImpossible {
					out.Impossible = a.Failure // the last entry: a claim ends its round
				}
				if a.Stage == models.StageReadiness {
					out.NotReady = true
					continue // no attempt was made: Missing says why
				}
				out.Attempts = append(out.Attempts, inbox.Attempt{Number: a.Attempt, Stage: a.Stage, Failure: a.Failure})
			}
			dedupeInboxAttempts(out.Attempts, dir)
			if len(out.Attempts) > 0 {
				out.Title = blockedTitle(out.Title)
			}
		}
	case models.InboxAdvisoryPrompt:
		out.Advisory = advisoryPromptView(it, me)
	case models.InboxAgentPaused:
		var pp models.AgentPausedPayload
		if json.Unmarshal(it.Payload, &pp) == nil {
			out.Agent = pp.Agent
			out.AgentHref = "/agents/" + itoa(pp.AgentID)
			out.Details = append(out.Details, components.DefItem{Term: "exit status", Value: strconv.Itoa(pp.ExitCode)},
				components.DefItem{Term: "why", Value: dir.tidyDiagnosis("", pp.Reason), Mono: true})
		}
	default:
		var m map[string]any
		if json.Unmarshal(it.Payload, &m) == nil {
			for _, k := range []string{"rejections", "last_reason", "verifier", "summary"} {
				if val, ok := m[k]; ok {
					out.Details = append(out.Details, components.DefItem{Term: k, Value: withoutServerPath(anyText(val))})
				}
			}
		}
	}
	if t != nil {
		out.TaskTitle, out.TaskState, out.Override = t.Title, string(t.State), t.Override
		if _, err := models.CheckTransition(t.State, models.ActRetry); err == nil && out.NotReady && it.Kind == models.InboxBlocked && mayTry(me, t, models.ActRetry, dir) {
			out.Forms = append(out.Forms, inbox.Form{Path: taskActionPath(t.ID, string(models.ActRetry)), Action: actCheckAgain,
				Label: "Check again", Variant: "primary"})
		}
		if out.BudgetStop && it.Kind == models.InboxBlocked && t.State == models.TaskBlocked &&
			(me.HasRole(models.RoleLead) || me.HasRole(models.RoleExec)) {
			out.Forms = append(out.Forms, inbox.Form{Path: "/tasks/" + itoa(t.ID) + "/budget", Action: actRaiseBudget,
				Label: "Raise budget and resume", Variant: "primary", Budget: true})
		}
		if it.Kind != models.InboxAgentPaused && it.Kind != models.InboxBudget && it.Kind != models.InboxAdvisoryPrompt {
			// (A paused agent is repaired on its page; a warning changes no task.)
			out.Forms = append(out.Forms, inboxTaskForms(t, me, dir)...)
		}
	}
	if it.Kind == models.InboxAdvisory || it.Kind == models.InboxAgentPaused || it.Kind == models.InboxBudget {
		if f, ok := dismissForm(me, it.ID); ok {
			out.Forms = append(out.Forms, f)
		}
	}
	return out
}

// inboxTaskForms are the forms of the resolving actions (inboxActions) me may take on
// t from its state. Amend is offered here only to answer an impossible claim: amending
// any other blocked task is the task page's.
func inboxTaskForms(t *models.Task, me *models.Agent, dir *directory) []inbox.Form {
	var out []inbox.Form
	for _, act := range inboxActions {
		if _, err := models.CheckTransition(t.State, act); err != nil || !mayTry(me, t, act, dir) {
			continue
		}
		if act == models.ActAmend && t.OpenImpossible() == nil {
			continue
		}
		sp := actionSpecs[act]
		f := inbox.Form{Path: taskActionPath(t.ID, string(act)), Action: string(act), Label: sp.label, Variant: sp.variant,
			Agent: sp.agent, Reason: sp.reason, ReasonLabel: sp.reasonLabel, Required: sp.reason && !sp.reasonOpt, Brief: sp.brief}
		if f.Brief {
			f.Values = map[string]string{"brief": t.Brief} // amended from what it says now
		}
		out = append(out, f)
	}
	return out
}

// completionFacts lists the blocked payload's completion contract normalised
// (contract.Completion.Normalized): its paths as the payload has them, an unset type,
// path, max_attempts or timeout as the value the checks applied.
func completionFacts(cp contract.Completion) []components.DefItem {
	cp = cp.Normalized()
	items := []components.DefItem{
		{Term: "type", Value: string(cp.Type)},
		{Term: "path", Value: cp.Path, Mono: true},
		{Term: "min_length", Value: positive(cp.MinLength)},
		{Term: "signal", Value: cp.Signal, Mono: true},
		{Term: "done_token", Value: cp.DoneToken, Mono: true},
		{Term: "verify", Values: cp.Verify, Mono: true},
		{Term: "evaluate", Value: cp.Evaluate},
		{Term: "max_attempts", Value: positive(cp.MaxAttempts)},
		{Term: "timeout", Value: dur(cp.Timeout.Duration)},
	}
	if cp.Checklist != nil {
		items = append(items, components.DefItem{Term: "checklist", Value: cp.Checklist.Path + " (" + strconv.Itoa(cp.Checklist.Count) + " checked)", Mono: true})
	}
	if cp.Clean {
		items = append(items, components.DefItem{Term: "clean", Value: "no uncommitted changes"})
	}
	return items
}

func anyText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// taskActionPath is where an inbox form that acts on task id posts.
func taskActionPath(id int64, act string) string {
	return "/tasks/" + itoa(id) + "/action/" + act
}

// inboxForm re-renders the inbox with the input and errors of task taskID's action
// form act, on every item of that task (422).
func (p *Pages) inboxForm(c echo.Context, taskID int64, act string, values, errs map[string]string) error {
	return p.inboxFormAt(c, taskActionPath(taskID, act), values, errs)
}

// inboxFormAt re-renders the inbox with the input and errors of the forms that post
// to path (422): a task action's form on every item of that task, a dismiss or
// advisory form on its one item.
func (p *Pages) inboxFormAt(c echo.Context, path string, values, errs map[string]string) error {
	v, err := p.inboxView(c)
	if err != nil {
		return err
	}
	fill := func(forms []inbox.Form) {
		for fi := range forms {
			if forms[fi].Path == path {
				forms[fi].Values, forms[fi].Errors = values, errs
			}
		}
	}
	for gi := range v.Groups {
		for ii := range v.Groups[gi].Items {
			it := &v.Groups[gi].Items[ii]
			fill(it.Forms)
			if it.Advisory != nil {
				fill(it.Advisory.Forms)
			}
		}
	}
	return render(c, http.StatusUnprocessableEntity, inbox.Page(*v))
}

// triageView says a blocked task's triage in words; nil when none ran.
func triageView(t *models.Triage) *inbox.Triage {
	if t == nil || t.Status == models.TriagePending {
		return nil
	}
	v := &inbox.Triage{Status: t.Status, Summary: t.Summary, Approach: t.Approach, Error: t.Error}
	switch t.Recommend {
	case models.RecommendRetry:
		v.Recommend = "retry with guidance"
		if t.Guidance != "" {
			v.Recommend += ": " + t.Guidance
		}
	case models.RecommendReassign:
		v.Recommend = "reassign to the role " + t.Role
	case models.RecommendAccept:
		v.Recommend = "accept the work as it is"
	case models.RecommendCancel:
		v.Recommend = "cancel the task"
	}
	return v
}

// dueView sets how long item has waited and when it is (or was) due.
func (p *Pages) dueView(item *inbox.Item, it *models.InboxItem, now time.Time) {
	item.Age = roughly(now.Sub(it.CreatedAt))
	due, ok := p.d.Deadlines.Due(it)
	if !ok {
		return
	}
	item.Due, item.DueAt = due.UTC().Format("2006-01-02 15:04 UTC"), due
	item.Overdue, item.Escalated = !now.Before(due), it.EscalatedAt != nil
}

// roughly says a duration the way a person reads a wait: 45s, 12m, 3h 20m, 2d 4h.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}
