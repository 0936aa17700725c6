package pages

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	hookspage "github.com/countersign/countersign/web/pages/webhooks"
)

// Webhooks pages (admins only, for reading as for changing: URLs can be credentials):
//
//	GET  /webhooks                                  the endpoints and the add form
//	POST /webhooks                                  add one; its secret is shown on the answer only
//	GET  /webhooks/:id                              an endpoint, its deliveries and log
//	POST /webhooks/:id                              save name, URL, events, enabled
//	POST /webhooks/:id/rotate                       a new secret (shown once) beside the current one
//	POST /webhooks/:id/secret/remove                end the rotation: the new secret alone signs
//	POST /webhooks/:id/delete                       delete it
//	POST /webhooks/:id/deliveries/:did/redeliver    send a delivery again now
func (p *Pages) webhookRoutes(g *echo.Group) {
	g.GET("/webhooks", p.webhooksList)
	g.POST("/webhooks", p.webhookCreate)
	g.GET("/webhooks/:id", p.webhookShow)
	g.POST("/webhooks/:id", p.webhookUpdate)
	g.POST("/webhooks/:id/rotate", p.webhookRotate)
	g.POST("/webhooks/:id/secret/remove", p.webhookRemoveSecret)
	g.POST("/webhooks/:id/delete", p.webhookDelete)
	g.POST("/webhooks/:id/deliveries/:did/redeliver", p.webhookRedeliver)
}

// webhooks returns the webhook service for an admin; EFORBIDDEN for anyone else,
// before anything is read (the service checks every change again).
func (p *Pages) webhooks(c echo.Context) (*models.Webhooks, error) {
	if !isAdmin(SignedIn(c)) {
		return nil, models.Forbidden("admin_only", "only an admin manages webhooks")
	}
	return models.NewWebhooks(p.d.Service)
}

func hookRow(w models.Webhook) hookspage.Row {
	return hookspage.Row{ID: w.ID, Name: w.Name, URL: w.URL, Events: w.Events, Enabled: w.Enabled,
		DisabledReason: w.DisabledReason, Rotating: w.PreviousSecret != ""}
}

func (p *Pages) webhooksView(c echo.Context, hooks *models.Webhooks) (hookspage.View, error) {
	v := hookspage.View{Meta: p.meta(c, "Webhooks", layout.NavAgents), CSRF: CSRFToken(c), Events: models.HookNames,
		Add: hookspage.Form{Events: []string{models.HookTaskBlocked, models.HookTaskEscalated, models.HookQuestionAsked}}}
	list, err := hooks.Store().ListWebhooks(c.Request().Context())
	for _, w := range list {
		v.Rows = append(v.Rows, hookRow(w))
	}
	return v, err
}

// webhooksList answers GET /webhooks.
func (p *Pages) webhooksList(c echo.Context) error {
	hooks, err := p.webhooks(c)
	if err != nil {
		return err
	}
	v, err := p.webhooksView(c, hooks)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, hookspage.Page(v))
}

func hookForm(c echo.Context) (hookspage.Form, error) {
	form, err := c.FormParams()
	if err != nil {
		return hookspage.Form{}, err
	}
	return hookspage.Form{Name: strings.TrimSpace(form.Get("name")), URL: strings.TrimSpace(form.Get("url")),
		Events: slices.Clone(form["events"]), Enabled: form.Get("enabled") != ""}, nil
}

// webhookCreate answers POST /webhooks: the new secret is rendered in this response
// only — never in a redirect, a flash cookie or a log.
func (p *Pages) webhookCreate(c echo.Context) error {
	hooks, err := p.webhooks(c)
	if err != nil {
		return err
	}
	f, err := hookForm(c)
	if err != nil {
		return err
	}
	w := &models.Webhook{Name: f.Name, URL: f.URL, Events: f.Events}
	secret, err := hooks.Create(c.Request().Context(), SignedIn(c), w)
	if err != nil && !isInvalid(err) && models.ErrorCode(err) != models.ECONFLICT {
		return err
	}
	v, verr := p.webhooksView(c, hooks)
	if verr != nil {
		return verr
	}
	if err != nil {
		v.Add, v.AddErrors = f, fieldErrors(err)
		if v.AddErrors == nil {
			v.AddErrors = map[string]string{"name": models.ErrorMessage(err)}
		}
		return render(c, http.StatusUnprocessableEntity, hookspage.Page(v))
	}
	v.NewSecret, v.NewName = secret, w.Name
	return render(c, http.StatusOK, hookspage.Page(v))
}

// hook loads the endpoint of the :id parameter, for an admin.
func (p *Pages) hook(c echo.Context) (*models.Webhooks, *models.Webhook, error) {
	hooks, err := p.webhooks(c)
	if err != nil {
		return nil, nil, err
	}
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return nil, nil, err
	}
	w, err := hooks.Store().GetWebhook(c.Request().Context(), id)
	if err != nil {
		return nil, nil, err
	}
	return hooks, w, nil
}

// hookView loads the endpoint of the :id parameter for its page, with its deliveries
// and their attempts.
func (p *Pages) hookView(c echo.Context) (hookspage.HookView, *models.Webhooks, *models.Webhook, error) {
	hooks, w, err := p.hook(c)
	if err != nil {
		return hookspage.HookView{}, nil, nil, err
	}
	ctx, id := c.Request().Context(), w.ID
	st := hooks.Store()
	v := hookspage.HookView{Meta: p.meta(c, w.Name, layout.NavAgents), CSRF: CSRFToken(c), Row: hookRow(*w), Events: models.HookNames,
		Edit: hookspage.Form{Name: w.Name, URL: w.URL, Events: w.Events, Enabled: w.Enabled}}
	ds, err := st.ListWebhookDeliveries(ctx, id, 100)
	if err != nil {
		return hookspage.HookView{}, nil, nil, err
	}
	for _, d := range ds {
		v.Deliveries = append(v.Deliveries, hookspage.Delivery{ID: d.ID, Event: d.Event, EventID: d.EventID, MessageID: d.MessageID,
			State: d.State, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, NextAttempt: d.NextAttemptAt,
			CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt})
	}
	as, err := st.ListWebhookAttempts(ctx, id, 200)
	if err != nil {
		return hookspage.HookView{}, nil, nil, err
	}
	for _, a := range as {
		v.Attempts = append(v.Attempts, hookspage.Attempt{DeliveryID: a.DeliveryID, At: a.At, Status: a.Status, Error: a.Error,
			DurationMS: a.DurationMS})
	}
	return v, hooks, w, nil
}

// webhookShow answers GET /webhooks/:id.
func (p *Pages) webhookShow(c echo.Context) error {
	v, _, _, err := p.hookView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, hookspage.Hook(v))
}

// webhookUpdate answers POST /webhooks/:id.
func (p *Pages) webhookUpdate(c echo.Context) error {
	v, hooks, w, err := p.hookView(c)
	if err != nil {
		return err
	}
	f, err := hookForm(c)
	if err != nil {
		return err
	}
	_, err = hooks.Update(c.Request().Context(), SignedIn(c), &models.Webhook{ID: w.ID, Name: f.Name, URL: f.URL, Events: f.Events, Enabled: f.Enabled})
	if err == nil {
		setFlash(c, components.FlashSuccess, "Saved webhook "+f.Name+".")
		return c.Redirect(http.StatusSeeOther, "/webhooks/"+itoa(w.ID))
	}
	if !isInvalid(err) && models.ErrorCode(err) != models.ECONFLICT {
		return err
	}
	v.Edit, v.Errors = f, fieldErrors(err)
	if v.Errors == nil {
		v.Errors = map[string]string{"name": models.ErrorMessage(err)}
	}
	return render(c, http.StatusUnprocessableEntity, hookspage.Hook(v))
}

// webhookRotate answers POST /webhooks/:id/rotate: the new secret is rendered in this
// response only.
func (p *Pages) webhookRotate(c echo.Context) error {
	hooks, w, err := p.hook(c)
	if err != nil {
		return err
	}
	secret, err := hooks.RotateSecret(c.Request().Context(), SignedIn(c), w.ID)
	if err != nil {
		return err
	}
	v, _, _, err := p.hookView(c) // with the rotation under way
	if err != nil {
		return err
	}
	v.NewSecret = secret
	return render(c, http.StatusOK, hookspage.Hook(v))
}

// webhookRemoveSecret answers POST /webhooks/:id/secret/remove.
func (p *Pages) webhookRemoveSecret(c echo.Context) error {
	hooks, w, err := p.hook(c)
	if err != nil {
		return err
	}
	if err := hooks.RemovePreviousSecret(c.Request().Context(), SignedIn(c), w.ID); err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, "Removed the previous secret of "+w.Name+": the new one alone signs now.")
	return c.Redirect(http.StatusSeeOther, "/webhooks/"+itoa(w.ID))
}

// webhookDelete answers POST /webhooks/:id/delete.
func (p *Pages) webhookDelete(c echo.Context) error {
	hooks, w, err := p.hook(c)
	if err != nil {
		return err
	}
	if err := hooks.Delete(c.Request().Context(), SignedIn(c), w.ID); err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, "Deleted webhook "+w.Name+".")
	return c.Redirect(http.StatusSeeOther, "/webhooks")
}

// webhookRedeliver answers POST /webhooks/:id/deliveries/:did/redeliver.
func (p *Pages) webhookRedeliver(c echo.Context) error {
	hooks, err := p.webhooks(c)
	if err != nil {
		return err
	}
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	did, err := handlers.PathID(c, "did")
	if err != nil {
		return err
	}
	if err := hooks.Redeliver(c.Request().Context(), SignedIn(c), id, did); err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, "Delivery "+itoa(did)+" will be sent again now.")
	return c.Redirect(http.StatusSeeOther, "/webhooks/"+itoa(id))
}
