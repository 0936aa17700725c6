package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// ForgesAPI serves /api/v1/forges: the GitHub and GitLab repositories verified task
// branches become pull requests on, and the forge logins mapped to agents. Admins
// only, for reading as for changing. No answer carries a forge's token; the webhook
// secret is in the answer that made it (creation, rotation) and nowhere else.
type ForgesAPI struct {
	forges *models.Forges
}

// NewForgesAPI returns the forge endpoints over the forge service.
func NewForgesAPI(forges *models.Forges) *ForgesAPI { return &ForgesAPI{forges: forges} }

// Register adds the routes to the /api/v1 group:
//
//	GET    /forges                       the forges with their logins and agents
//	POST   /forges                       create; 201 with webhook_secret, once
//	PATCH  /forges/{name}                change fields; a token given replaces the stored one
//	POST   /forges/{name}/rotate-secret  a new webhook secret, once
//	DELETE /forges/{name}                delete (409 while an agent names it)
//	PUT    /forges/{name}/users/{login}  map a login to {"agent": NAME}
//	DELETE /forges/{name}/users/{login}  remove the mapping
func (h *ForgesAPI) Register(api *echo.Group) {
	api.GET("/forges", h.List)
	api.POST("/forges", h.Create)
	api.PATCH("/forges/:name", h.Update)
	api.POST("/forges/:name/rotate-secret", h.Rotate)
	api.DELETE("/forges/:name", h.Delete)
	api.PUT("/forges/:name/users/:login", h.MapUser)
	api.DELETE("/forges/:name/users/:login", h.UnmapUser)
}

// ForgeWebhookPath is the path a forge's webhook deliveries are posted to; the admin
// pastes the server's public URL followed by it into the forge's webhook settings.
func ForgeWebhookPath(name string) string { return "/api/v1/forges/" + name + "/webhook" }

// forgeView is a forge as the API shows it: models.Forge never marshals its token or
// secret; the agents that name it and its mapped logins are added.
type forgeView struct {
	models.Forge
	WebhookPath string             `json:"webhook_path"`
	Agents      []string           `json:"agents"`
	Users       []models.ForgeUser `json:"users"`
}

// forgeInput is the body of POST /forges.
type forgeInput struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	Repo         string `json:"repo"`
	BaseURL      string `json:"base_url"`
	TargetBranch string `json:"target_branch"`
	Token        string `json:"token"`
}

// forgePatch is the body of PATCH /forges/{name}: each field absent stays as it is.
type forgePatch struct {
	Kind         *string `json:"kind"`
	Repo         *string `json:"repo"`
	BaseURL      *string `json:"base_url"`
	TargetBranch *string `json:"target_branch"`
	Token        *string `json:"token"`
}

// admin refuses anyone but an admin, and attempt tokens, before anything is read.
func admin(c echo.Context) error {
	a := Actor(c)
	if err := a.Unscoped("manage forges"); err != nil {
		return err
	}
	if !a.HasRole(models.RoleAdmin) {
		return models.Forbidden("admin_only", "only an admin manages forges")
	}
	return nil
}

func pathForge(c echo.Context) string { return strings.ToLower(strings.TrimSpace(c.Param("name"))) }

// view adds to f its agents and logins.
func (h *ForgesAPI) view(c echo.Context, f models.Forge, agents []models.Agent) (forgeView, error) {
	users, err := h.forges.Store().ListForgeUsers(c.Request().Context(), f.ID)
	v := forgeView{Forge: f, WebhookPath: ForgeWebhookPath(f.Name), Agents: []string{}, Users: users}
	if v.Users == nil {
		v.Users = []models.ForgeUser{}
	}
	for _, a := range agents {
		if a.Forge == f.Name {
			v.Agents = append(v.Agents, a.Name)
		}
	}
	return v, err
}

// one reads forge name with its agents and logins.
func (h *ForgesAPI) one(c echo.Context, name string) (forgeView, error) {
	ctx := c.Request().Context()
	f, err := h.forges.Store().GetForgeByName(ctx, name)
	if err != nil {
		return forgeView{}, err
	}
	agents, err := h.forges.Store().ListAgents(ctx)
	if err != nil {
		return forgeView{}, err
	}
	return h.view(c, *f, agents)
}

// List answers GET /forges.
func (h *ForgesAPI) List(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	list, err := h.forges.Store().ListForges(ctx)
	if err != nil {
		return err
	}
	agents, err := h.forges.Store().ListAgents(ctx)
	if err != nil {
		return err
	}
	out := make([]forgeView, 0, len(list))
	for _, f := range list {
		v, err := h.view(c, f, agents)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"forges": out})
}

// Create answers POST /forges with 201: the forge and its webhook_secret, which no
// other answer carries.
func (h *ForgesAPI) Create(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	var in forgeInput
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	f := &models.Forge{Name: in.Name, Kind: in.Kind, Repo: in.Repo, BaseURL: in.BaseURL, TargetBranch: in.TargetBranch, Token: in.Token}
	secret, err := h.forges.Create(c.Request().Context(), Actor(c), f)
	if err != nil {
		return err
	}
	v, err := h.one(c, f.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, struct {
		forgeView
		WebhookSecret string `json:"webhook_secret"`
	}{v, secret})
}

// Update answers PATCH /forges/{name}.
func (h *ForgesAPI) Update(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	var in forgePatch
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	cur, err := h.forges.Store().GetForgeByName(c.Request().Context(), pathForge(c))
	if err != nil {
		return err
	}
	f := *cur
	f.Token = "" // keeps the stored one unless a new one is given
	for _, s := range []struct {
		in  *string
		out *string
	}{{in.Kind, &f.Kind}, {in.Repo, &f.Repo}, {in.BaseURL, &f.BaseURL}, {in.TargetBranch, &f.TargetBranch}, {in.Token, &f.Token}} {
		if s.in != nil {
			*s.out = *s.in
		}
	}
	if in.Token != nil && strings.TrimSpace(*in.Token) == "" {
		return &models.Error{Code: models.EINVALID, Message: "a token given must not be empty", Fields: map[string]string{"token": "must not be empty; leave it out to keep the stored one"}}
	}
	if _, err := h.forges.Update(c.Request().Context(), Actor(c), &f); err != nil {
		return err
	}
	v, err := h.one(c, f.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// Rotate answers POST /forges/{name}/rotate-secret with the new webhook_secret, once.
func (h *ForgesAPI) Rotate(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	secret, err := h.forges.RotateWebhookSecret(c.Request().Context(), Actor(c), pathForge(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"name": pathForge(c), "webhook_secret": secret})
}

// Delete answers DELETE /forges/{name} with 204.
func (h *ForgesAPI) Delete(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	if err := h.forges.Delete(c.Request().Context(), Actor(c), pathForge(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// MapUser answers PUT /forges/{name}/users/{login} {"agent": NAME} with the forge.
func (h *ForgesAPI) MapUser(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	var in struct {
		Agent string `json:"agent"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	if strings.TrimSpace(in.Agent) == "" {
		return &models.Error{Code: models.EINVALID, Message: "an agent is required", Fields: map[string]string{"agent": "must name an agent; DELETE removes a mapping"}}
	}
	if err := h.forges.MapUser(c.Request().Context(), Actor(c), pathForge(c), c.Param("login"), in.Agent); err != nil {
		return err
	}
	v, err := h.one(c, pathForge(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// UnmapUser answers DELETE /forges/{name}/users/{login} with 204.
func (h *ForgesAPI) UnmapUser(c echo.Context) error {
	if err := admin(c); err != nil {
		return err
	}
	if err := h.forges.MapUser(c.Request().Context(), Actor(c), pathForge(c), c.Param("login"), ""); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
