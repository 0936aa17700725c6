package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/inbox"
)

// actDismiss names the inbox form that dismisses an advisory item, in its route
// (POST /inbox/:id/dismiss) and its test ids. It is not a task action: the task's
// state does not change, only the item is resolved.
const actDismiss = "dismiss"

// dismissPath is where the Dismiss form of inbox item id posts.
func dismissPath(id int64) string { return "/inbox/" + itoa(id) + "/" + actDismiss }

// dismissForm is the Dismiss form of advisory item itemID, offered to those who may
// resolve inbox items.
func dismissForm(me *models.Agent, itemID int64) (inbox.Form, bool) {
	if !models.CanResolveInbox(me) {
		return inbox.Form{}, false
	}
	return inbox.Form{Path: dismissPath(itemID), Action: actDismiss, Label: "Dismiss", Variant: "secondary", Reason: true,
		ReasonLabel: "Note (optional)"}, true
}

// dismissAdvisory answers POST /inbox/:id/dismiss with reason (an optional note): it
// dismisses that one inbox item through the service, which checks every rule (lead or
// exec, advisory items only, not twice), and returns to the inbox with a notice. A
// note that is too long re-renders the inbox with the error on this item's form (422).
func (p *Pages) dismissAdvisory(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	note := c.FormValue("reason")
	it, err := p.svc.Inbox.ResolveInboxItem(c.Request().Context(), SignedIn(c), id, note)
	if isInvalid(err) {
		errs := map[string]string{}
		for k, v := range fieldErrors(err) {
			if k == "note" {
				k = "reason" // the form's field
			}
			errs[k] = v
		}
		return p.inboxFormAt(c, dismissPath(id), map[string]string{"reason": note}, errs)
	}
	if err != nil {
		return err
	}
	what := "advisory output"
	if it.Kind == models.InboxAgentPaused {
		what = "paused agent's notice"
	}
	return done(c, backTo(c, "/inbox"), "Task #"+itoa(it.TaskID)+": "+what+" dismissed.")
}
