package pages

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/pages/task"
)

// actionSpec is how an action looks as a form.
type actionSpec struct {
	label, variant, reasonLabel string
	agent, reason, reasonOpt    bool
	notes, summary, brief       bool
}

var actionSpecs = map[models.Action]actionSpec{
	models.ActAssign:             {label: "Assign", variant: "primary", agent: true},
	models.ActReassign:           {label: "Reassign", variant: "secondary", agent: true, reason: true, reasonOpt: true, reasonLabel: "Note for the new assignee (optional)"},
	models.ActStart:              {label: "Start work", variant: "primary"},
	models.ActSubmit:             {label: "Submit for review", variant: "primary", summary: true},
	models.ActApprove:            {label: "Approve", variant: "primary"},
	models.ActReject:             {label: "Reject", variant: "danger", reason: true, reasonLabel: "Reason for the builder"},
	models.ActVerify:             {label: "Verify", variant: "primary", notes: true},
	models.ActRejectVerification: {label: "Reject verification", variant: "danger", reason: true, reasonLabel: "What is wrong"},
	models.ActReopen:             {label: "Reopen", variant: "danger", reason: true, reasonLabel: "Why reopen"},
	models.ActRetry:              {label: "Retry with guidance", variant: "primary", reason: true, reasonLabel: "Guidance for the worker"},
	models.ActAccept:             {label: "Accept as done", variant: "secondary", reason: true, reasonLabel: "Reason for accepting"},
	models.ActCancel:             {label: "Cancel task", variant: "danger", reason: true, reasonOpt: true, reasonLabel: "Reason (optional)"},
	models.ActAnswer:             {label: "Answer", variant: "primary", reason: true, reasonLabel: "Your answer (the worker gets it in its next brief)"},
	models.ActAmend:              {label: "Amend the brief", variant: "secondary", brief: true, reason: true, reasonOpt: true, reasonLabel: "Guidance with the new brief (optional)"},
}

// mayTry is whether me may take act on t (models.MayTake, the rule the API's 409
// narrows its allowed actions with): it decides which buttons to show. The service
// checks everything again when the form is posted.
func mayTry(me *models.Agent, t *models.Task, act models.Action, dir *directory) bool {
	var builder *models.Agent
	if t.BuilderID != nil {
		builder = dir.byID[*t.BuilderID]
	}
	return models.MayTake(me, t, act, builder, models.TeamSize(dir.list))
}

// actionForms lists the forms of the actions in allowed (those legal from the task's
// state that the signed-in agent may take: models.TaskService.ActionsFor).
func actionForms(allowed []string) []task.ActionForm {
	var out []task.ActionForm
	for _, a := range allowed {
		sp, ok := actionSpecs[models.Action(a)]
		if !ok {
			continue
		}
		out = append(out, task.ActionForm{Action: a, Label: sp.label, Variant: sp.variant, Agent: sp.agent,
			Reason: sp.reason, ReasonOpt: sp.reasonOpt, ReasonLabel: sp.reasonLabel, Notes: sp.notes, Summary: sp.summary, Brief: sp.brief})
	}
	return out
}

// taskAction answers POST /tasks/:id/action/:action with agent, reason, notes,
// summary, files_changed and brief, and back (where to return: the task page by default).
func (p *Pages) taskAction(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	act := models.Action(c.Param("action"))
	if _, ok := actionSpecs[act]; !ok {
		return models.NotFound("action", act)
	}
	in := models.ActionInput{Agent: c.FormValue("agent"), Reason: c.FormValue("reason"), Notes: c.FormValue("notes"),
		Summary: c.FormValue("summary"), FilesChanged: c.FormValue("files_changed"), Brief: c.FormValue("brief")}
	if act == models.ActAnswer {
		in.Answer = in.Reason // the action forms have one text field, "reason"
	}
	back := backTo(c, "/tasks/"+itoa(id))
	t, err := p.svc.Tasks.TaskAction(c.Request().Context(), SignedIn(c), id, act, in)
	if isInvalid(err) {
		values := map[string]string{"agent": in.Agent, "reason": in.Reason, "notes": in.Notes, "summary": in.Summary, "brief": in.Brief}
		if back == "/inbox" {
			return p.inboxForm(c, id, string(act), values, fieldErrors(err))
		}
		return p.taskForm(c, id, string(act), values, fieldErrors(err))
	}
	if err != nil {
		return err
	}
	return done(c, back, "Task #"+itoa(id)+": "+actionSpecs[act].label+" done — now "+components.StateLabel(string(t.State))+".")
}

// taskForm re-renders the task page with one action form's input and errors (422).
func (p *Pages) taskForm(c echo.Context, id int64, act string, values, errs map[string]string) error {
	v, err := p.taskView(c, id)
	if err != nil {
		return err
	}
	found := false
	for i := range v.Actions {
		if v.Actions[i].Action == act {
			v.Actions[i].Values, v.Actions[i].Errors, found = values, errs, true
		}
	}
	if !found {
		sp := actionSpecs[models.Action(act)]
		v.Actions = append(v.Actions, task.ActionForm{Action: act, Label: sp.label, Variant: sp.variant, Agent: sp.agent,
			Reason: sp.reason, ReasonOpt: sp.reasonOpt, ReasonLabel: sp.reasonLabel, Notes: sp.notes, Summary: sp.summary,
			Brief: sp.brief, Values: values, Errors: errs})
	}
	return render(c, http.StatusUnprocessableEntity, task.Page(*v))
}
