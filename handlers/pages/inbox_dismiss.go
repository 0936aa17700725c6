package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/inbox"
)

// actDismiss is the inbox form that dismisses a task's advisory output. It is not a
// task action (the task's state does not change), but the inbox's forms post to
// /tasks/:id/action/:action, so it is routed there by name.
const actDismiss = "dismiss"

// dismissForm is the Dismiss form of an advisory item, offered to those who may
// resolve inbox items.
func dismissForm(me *models.Agent) (inbox.Form, bool) {
	if !models.CanResolveInbox(me) {
		return inbox.Form{}, false
	}
	return inbox.Form{Action: actDismiss, Label: "Dismiss", Variant: "secondary", Reason: true,
		ReasonLabel: "Note (optional)"}, true
}

// dismissAdvisory answers POST /tasks/:id/action/dismiss with reason (an optional
// note): it dismisses the task's open advisory inbox items through the service, which
// checks every rule (lead or exec, advisory items only, not twice), and returns to the
// inbox with a notice. The form names the task rather than the item because every
// inbox form posts to its task; a task has more than one open advisory item only when
// it passed again after a reopen, and its outputs are looked at together.
func (p *Pages) dismissAdvisory(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	items, err := p.d.Service.Store().ListInbox(ctx, models.InboxFilter{TaskID: id, IncludeResolved: true, Limit: 1000})
	if err != nil {
		return err
	}
	var targets []models.InboxItem
	for _, it := range items {
		if it.Kind == models.InboxAdvisory && !it.Resolved {
			targets = append(targets, it)
		}
	}
	if len(targets) == 0 {
		if len(items) == 0 {
			return models.NotFound("inbox item of task", id)
		}
		// Nothing to dismiss: let the service refuse with its own rule, on an open
		// item of another kind if there is one, else on the newest resolved item.
		pick := items[0]
		for _, it := range items {
			if !it.Resolved {
				pick = it
				break
			}
		}
		targets = []models.InboxItem{pick}
	}
	note := c.FormValue("reason")
	for _, it := range targets {
		_, err := p.d.Service.ResolveInboxItem(ctx, SignedIn(c), it.ID, note)
		if isInvalid(err) {
			errs := map[string]string{}
			for k, v := range fieldErrors(err) {
				if k == "note" {
					k = "reason" // the form's field
				}
				errs[k] = v
			}
			return p.inboxForm(c, id, actDismiss, map[string]string{"reason": note}, errs)
		}
		if err != nil {
			return err
		}
	}
	msg := "Task #" + itoa(id) + ": advisory output dismissed."
	if len(targets) > 1 {
		msg = "Task #" + itoa(id) + ": " + itoa(int64(len(targets))) + " advisory outputs dismissed."
	}
	return done(c, "/inbox", msg)
}
