package pages

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	forgespage "github.com/countersign/countersign/web/pages/forges"
)

// Forges pages (admins only, for reading as for changing):
//
//	GET  /forges                      the forges and the add form
//	POST /forges                      add one; its webhook secret is shown on the answer only
//	GET  /forges/:name                a forge: settings, token, webhook, logins
//	POST /forges/:name                save kind, repository, base URL, target branch; a token typed replaces the stored one
//	POST /forges/:name/rotate         a new webhook secret, shown on the answer only
//	POST /forges/:name/delete         delete it (refused while an agent names it)
//	POST /forges/:name/users          map a login to an agent
//	POST /forges/:name/users/remove   remove a login's mapping
//
// No page ever renders a forge's token: the view models have no field for it.
func (p *Pages) forgeRoutes(g *echo.Group) {
	g.GET("/forges", p.forgesList)
	g.POST("/forges", p.forgeCreate)
	g.GET("/forges/:name", p.forgeShow)
	g.POST("/forges/:name", p.forgeUpdate)
	g.POST("/forges/:name/rotate", p.forgeRotate)
	g.POST("/forges/:name/delete", p.forgeDelete)
	g.POST("/forges/:name/users", p.forgeMap)
	g.POST("/forges/:name/users/remove", p.forgeUnmap)
}

// forges returns the forge service for an admin; EFORBIDDEN for anyone else, before
// anything is read (the service checks every change again).
func (p *Pages) forges(c echo.Context) (*models.Forges, error) {
	if !isAdmin(SignedIn(c)) {
		return nil, models.Forbidden("admin_only", "only an admin manages forges")
	}
	return models.NewForges(p.d.Service)
}

// forgeRow describes f with the agents that name it and its logins.
func (p *Pages) forgeRow(c echo.Context, forges *models.Forges, f models.Forge, agents []models.Agent) (forgespage.Row, error) {
	r := forgespage.Row{Name: f.Name, Kind: f.Kind, Repo: f.Repo, BaseURL: f.BaseURL, TargetBranch: f.TargetBranch,
		WebhookURL: c.Scheme() + "://" + c.Request().Host + handlers.ForgeWebhookPath(f.Name)}
	for _, a := range agents {
		if a.Forge == f.Name {
			r.Agents = append(r.Agents, a.Name)
		}
	}
	users, err := forges.Store().ListForgeUsers(c.Request().Context(), f.ID)
	for _, u := range users {
		r.Users = append(r.Users, forgespage.User{Login: u.Login, Agent: u.Agent})
	}
	return r, err
}

func (p *Pages) forgesView(c echo.Context, forges *models.Forges) (forgespage.View, error) {
	ctx := c.Request().Context()
	v := forgespage.View{Meta: p.meta(c, "Forges", layout.NavAgents), CSRF: CSRFToken(c), Kinds: forgespage.Kinds,
		Add: forgespage.Form{Kind: models.ForgeGitHub}}
	list, err := forges.Store().ListForges(ctx)
	if err != nil {
		return v, err
	}
	agents, err := forges.Store().ListAgents(ctx)
	if err != nil {
		return v, err
	}
	for _, f := range list {
		r, err := p.forgeRow(c, forges, f, agents)
		if err != nil {
			return v, err
		}
		v.Rows = append(v.Rows, r)
	}
	return v, nil
}

// forgesList answers GET /forges.
func (p *Pages) forgesList(c echo.Context) error {
	forges, err := p.forges(c)
	if err != nil {
		return err
	}
	v, err := p.forgesView(c, forges)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, forgespage.Page(v))
}

// forgeForm reads the add or edit form; the token is returned apart, never into the
// form a page re-renders.
func forgeForm(c echo.Context) (forgespage.Form, string) {
	f := forgespage.Form{Name: strings.TrimSpace(c.FormValue("name")), Kind: c.FormValue("kind"), Repo: strings.TrimSpace(c.FormValue("repo")),
		BaseURL: strings.TrimSpace(c.FormValue("base_url")), TargetBranch: strings.TrimSpace(c.FormValue("target_branch"))}
	return f, c.FormValue("token")
}

// formErrors are err's field errors, or its message under field when it names none.
func formErrors(err error, field string) map[string]string {
	if fe := fieldErrors(err); fe != nil {
		return fe
	}
	return map[string]string{field: models.ErrorMessage(err)}
}

// forgeCreate answers POST /forges: the new webhook secret is rendered in this
// response only — never in a redirect, a flash cookie or a log.
func (p *Pages) forgeCreate(c echo.Context) error {
	forges, err := p.forges(c)
	if err != nil {
		return err
	}
	form, token := forgeForm(c)
	f := &models.Forge{Name: form.Name, Kind: form.Kind, Repo: form.Repo, BaseURL: form.BaseURL, TargetBranch: form.TargetBranch, Token: token}
	secret, err := forges.Create(c.Request().Context(), SignedIn(c), f)
	if err != nil && !isInvalid(err) && models.ErrorCode(err) != models.ECONFLICT {
		return err
	}
	v, verr := p.forgesView(c, forges)
	if verr != nil {
		return verr
	}
	if err != nil {
		v.Add, v.AddErrors = form, formErrors(err, "name")
		return render(c, http.StatusUnprocessableEntity, forgespage.Page(v))
	}
	v.NewSecret, v.NewName, v.NewKind = secret, f.Name, f.Kind
	return render(c, http.StatusOK, forgespage.Page(v))
}

// forgeView loads the forge of the :name parameter for its page, for an admin.
func (p *Pages) forgeView(c echo.Context) (forgespage.ForgeView, *models.Forges, *models.Forge, error) {
	forges, err := p.forges(c)
	if err != nil {
		return forgespage.ForgeView{}, nil, nil, err
	}
	ctx := c.Request().Context()
	f, err := forges.Store().GetForgeByName(ctx, strings.ToLower(c.Param("name")))
	if err != nil {
		return forgespage.ForgeView{}, nil, nil, err
	}
	agents, err := forges.Store().ListAgents(ctx)
	if err != nil {
		return forgespage.ForgeView{}, nil, nil, err
	}
	row, err := p.forgeRow(c, forges, *f, agents)
	if err != nil {
		return forgespage.ForgeView{}, nil, nil, err
	}
	v := forgespage.ForgeView{Meta: p.meta(c, f.Name, layout.NavAgents), CSRF: CSRFToken(c), Row: row, Kinds: forgespage.Kinds,
		Edit: forgespage.Form{Name: f.Name, Kind: f.Kind, Repo: f.Repo, BaseURL: f.BaseURL, TargetBranch: f.TargetBranch}}
	for _, a := range agents {
		if a.Kind != models.KindSystem {
			v.AgentOptions = append(v.AgentOptions, components.Option{Value: a.Name, Label: a.Name})
		}
	}
	return v, forges, f, nil
}

// forgeShow answers GET /forges/:name.
func (p *Pages) forgeShow(c echo.Context) error {
	v, _, _, err := p.forgeView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, forgespage.Forge(v))
}

// forgeUpdate answers POST /forges/:name: a token typed replaces the stored one, an
// empty token input keeps it.
func (p *Pages) forgeUpdate(c echo.Context) error {
	v, forges, f, err := p.forgeView(c)
	if err != nil {
		return err
	}
	form, token := forgeForm(c)
	form.Name = f.Name
	in := &models.Forge{Name: f.Name, Kind: form.Kind, Repo: form.Repo, BaseURL: form.BaseURL, TargetBranch: form.TargetBranch, Token: token}
	if _, err = forges.Update(c.Request().Context(), SignedIn(c), in); err == nil {
		msg := "Saved forge " + f.Name + "."
		if strings.TrimSpace(token) != "" {
			msg = "Saved forge " + f.Name + " with its new token."
		}
		setFlash(c, components.FlashSuccess, msg)
		return c.Redirect(http.StatusSeeOther, "/forges/"+f.Name)
	}
	if !isInvalid(err) {
		return err
	}
	v.Edit, v.Errors = form, formErrors(err, "repo")
	return render(c, http.StatusUnprocessableEntity, forgespage.Forge(v))
}

// forgeRotate answers POST /forges/:name/rotate: the new secret is rendered in this
// response only.
func (p *Pages) forgeRotate(c echo.Context) error {
	v, forges, f, err := p.forgeView(c)
	if err != nil {
		return err
	}
	secret, err := forges.RotateWebhookSecret(c.Request().Context(), SignedIn(c), f.Name)
	if err != nil {
		return err
	}
	v.NewSecret = secret
	return render(c, http.StatusOK, forgespage.Forge(v))
}

// forgeDelete answers POST /forges/:name/delete; while agents name the forge it is
// refused with a message naming them.
func (p *Pages) forgeDelete(c echo.Context) error {
	_, forges, f, err := p.forgeView(c)
	if err != nil {
		return err
	}
	err = forges.Delete(c.Request().Context(), SignedIn(c), f.Name)
	if models.ErrorCode(err) == models.ECONFLICT {
		setFlash(c, components.FlashError, models.ErrorMessage(err))
		return c.Redirect(http.StatusSeeOther, "/forges/"+f.Name)
	}
	if err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, "Deleted forge "+f.Name+".")
	return c.Redirect(http.StatusSeeOther, "/forges")
}

// forgeMap answers POST /forges/:name/users: login acts as agent from now on.
func (p *Pages) forgeMap(c echo.Context) error {
	v, forges, f, err := p.forgeView(c)
	if err != nil {
		return err
	}
	m := forgespage.MapForm{Login: strings.TrimSpace(c.FormValue("login")), Agent: c.FormValue("agent")}
	if m.Agent == "" {
		v.Map, v.MapErrors = m, map[string]string{"agent": "choose an agent"}
		return render(c, http.StatusUnprocessableEntity, forgespage.Forge(v))
	}
	err = forges.MapUser(c.Request().Context(), SignedIn(c), f.Name, m.Login, m.Agent)
	if err == nil {
		setFlash(c, components.FlashSuccess, m.Login+" on "+f.Name+" acts as "+m.Agent+".")
		return c.Redirect(http.StatusSeeOther, "/forges/"+f.Name)
	}
	if !isInvalid(err) && models.ErrorCode(err) != models.ENOTFOUND {
		return err
	}
	v.Map, v.MapErrors = m, formErrors(err, "agent")
	return render(c, http.StatusUnprocessableEntity, forgespage.Forge(v))
}

// forgeUnmap answers POST /forges/:name/users/remove.
func (p *Pages) forgeUnmap(c echo.Context) error {
	_, forges, f, err := p.forgeView(c)
	if err != nil {
		return err
	}
	login := c.FormValue("login")
	if err := forges.MapUser(c.Request().Context(), SignedIn(c), f.Name, login, ""); err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, login+" on "+f.Name+" no longer acts as an agent.")
	return c.Redirect(http.StatusSeeOther, "/forges/"+f.Name)
}
