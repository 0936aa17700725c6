package pages

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/queue"
)

// queuePageItems is how many items the queue page shows, the longest waiting first.
const queuePageItems = 100

// overviewQueue is how many queue items the overview shows before its link to the rest.
const overviewQueue = 5

// queueKinds labels the kinds of queue items.
var queueKinds = map[string]string{
	models.InboxBlocked: "Blocked", models.InboxEscalation: "Escalation", models.InboxAdvisory: "Advisory output",
	models.InboxQuestion: "Question", models.InboxAdvisoryPrompt: "Advisory task", models.InboxAgentPaused: "Paused agent",
	models.InboxBudget: "Budget", models.InboxDrift: "Changed after verification",
	models.QueueReview: "Review", models.QueueVerify: "Verify", models.QueueGoal: "Goal to verify", models.QueueAssigned: "Your work",
}

// queueCountKey is the request's queue count once a page has read the whole queue,
// so that the nav does not read it twice.
const queueCountKey = "pages.queue.count"

// queuePage answers GET /queue[?role=R]: what waits on the signed-in person.
func (p *Pages) queuePage(c echo.Context) error {
	l, err := p.queueList(c, "/queue", c.QueryParam("role"), queuePageItems)
	if err != nil {
		return err
	}
	v := queue.View{List: l, Meta: p.meta(c, "Waiting on you", layout.NavQueue)}
	v.Meta.LiveRefresh = "any"
	return ok(c, queue.Page(v))
}

// queueCountJSON answers GET /queue/count with {"count": n}: the nav's count, which
// static/live.js asks for again when an event may have changed it.
func (p *Pages) queueCountJSON(c echo.Context) error {
	ctx := c.Request().Context()
	last, err := p.lastEventID(ctx)
	if err != nil {
		return err
	}
	n, err := p.queueCount(ctx, SignedIn(c), last)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]int{"count": n})
}

// queueList builds the signed-in person's queue, only what waits on role when it is
// one of theirs, its first limit items shown; its forms return to back.
func (p *Pages) queueList(c echo.Context, back, role string, limit int) (queue.List, error) {
	me := SignedIn(c)
	items, err := p.svc.Queue.WaitingOn(c.Request().Context(), me)
	if err != nil {
		return queue.List{}, err
	}
	c.Set(queueCountKey, len(items))
	l := queue.List{CSRF: CSRFToken(c), Back: back, Roles: me.Roles}
	if slices.Contains(me.Roles, role) {
		l.Role = role
	}
	now := p.svc.Now()
	for _, it := range items {
		if l.Role != "" && !slices.Contains(it.Roles, l.Role) {
			continue
		}
		if l.Total++; len(l.Items) < limit {
			l.Items = append(l.Items, queueItem(it, now))
		}
	}
	return l, nil
}

// queueItem is the view of one item.
func queueItem(it models.QueueItem, now time.Time) queue.Item {
	out := queue.Item{Kind: it.Kind, KindLabel: queueKinds[it.Kind], Subject: it.Subject, Why: it.Why,
		Since: it.Since, Age: roughly(now.Sub(it.Since))}
	if out.KindLabel == "" {
		out.KindLabel = it.Kind
	}
	if it.Kind == models.QueueGoal {
		out.Key, out.Ref, out.Href = it.Kind+"-"+itoa(it.GoalID), "Goal #"+itoa(it.GoalID), "/goals/"+itoa(it.GoalID)
	} else {
		out.Key, out.Ref, out.Href = it.Kind+"-"+itoa(it.TaskID), "Task #"+itoa(it.TaskID), "/tasks/"+itoa(it.TaskID)
	}
	if len(it.Roles) > 0 {
		out.WaitsOn = "as " + strings.Join(it.Roles, ", ")
	}
	out.Primary = queueAction(it, out.Href, it.Primary, true)
	for _, a := range it.Secondary {
		out.More = append(out.More, queueAction(it, out.Href, a, false))
	}
	return out
}

// queueAction is the form or link of action name on item it; href is its subject's page.
func queueAction(it models.QueueItem, href, name string, primary bool) queue.Action {
	variant := func(v string) string {
		if primary {
			return v
		}
		return v + " small"
	}
	a := queue.Action{Name: name, Variant: variant("secondary")}
	if sp, ok := actionSpecs[models.Action(name)]; ok {
		a.Label, a.Variant, a.Path = sp.label, variant(sp.variant), taskActionPath(it.TaskID, name)
		if sp.reason || sp.notes {
			a.Field, a.FieldLabel, a.Required = "reason", sp.reasonLabel, sp.reason && !sp.reasonOpt
		}
		if sp.notes {
			a.Field, a.FieldLabel = "notes", "Notes (optional)"
		}
		if primary && it.NeedsText != "" {
			a.Field, a.Required = it.NeedsText, it.TextRequired
		}
		switch models.Action(name) {
		case models.ActRetry:
			if !a.Required {
				a.Label, a.FieldLabel = "Check again", "Guidance for the worker (optional)"
			}
		case models.ActReassign:
			a.Path, a.Href, a.Label = "", href, "Reassign…" // the agent is chosen on the task page
		case models.ActCancel:
			a.Confirm = components.ConfirmCancelTask
		}
		return a
	}
	switch name {
	case models.QueueOpen:
		a.Href, a.Label = href, "Open"
		if it.Kind == models.InboxAdvisory {
			a.Label = "Look at the output"
		}
		if it.AgentID > 0 {
			a.Href, a.Label = "/agents/"+itoa(it.AgentID), "Open the agent"
		}
		if primary {
			a.Variant = "primary"
		}
	case models.QueueVerifyGoal:
		a.Label, a.Variant, a.Path = "Verify goal", variant("primary"), "/goals/"+itoa(it.GoalID)+"/verify"
		a.Field, a.FieldLabel, a.Required = "notes", "How you tested the integrated result", true
	case models.QueueRejectGoal:
		a.Label, a.Href = "Reject with fix tasks…", "/goals/"+itoa(it.GoalID)+"#goal-reject"
	case models.QueueDismiss:
		a.Label, a.Path, a.Confirm = "Dismiss", dismissPath(it.InboxID), components.ConfirmDismiss
	case models.QueueProceed:
		a.Label, a.Variant, a.Path = "Proceed as advisory", variant("primary"), "/tasks/"+itoa(it.TaskID)+"/advisory/"+models.AdvisoryProceed
	case models.QueueMakeVerifiable:
		a.Label, a.Href = "Make verifiable…", "/inbox"
	case models.QueueAdvisoryCancel:
		a.Label, a.Variant, a.Confirm = "Cancel task", variant("danger"), components.ConfirmCancelTask
		a.Path = "/tasks/" + itoa(it.TaskID) + "/advisory/" + models.AdvisoryCancel
	}
	return a
}

// backTo is where a form returns: its back field when that is one of the lists that
// post forms elsewhere (the queue, the overview, the inbox), else def.
func backTo(c echo.Context, def string) string {
	switch b := c.FormValue("back"); b {
	case "/queue", "/", "/inbox":
		return b
	}
	return def
}

// waitingVerbs say what the person waited on does next.
var waitingVerbs = map[models.Action]string{
	models.ActApprove: "to approve it", models.ActVerify: "to verify it", models.ActAnswer: "to answer its worker",
	models.ActRetry: "to retry, reassign, accept or cancel it", models.ActStart: "to start it", models.ActSubmit: "to submit it",
}

// waitingWords says who a task waits on: "the tester role (tess), to verify it";
// "" for nil (no person's turn).
func waitingWords(w *models.Waiting) string {
	if w == nil {
		return ""
	}
	names := strings.Join(w.Names, ", ")
	if len(w.Names) == 0 {
		names = "nobody enabled may"
	}
	who := names
	if len(w.Roles) > 0 {
		role := "the " + strings.Join(w.Roles, " or ") + " role"
		who = role + " (" + names + ")"
	}
	if v := waitingVerbs[w.Action]; v != "" {
		who += ", " + v
	}
	return who
}
