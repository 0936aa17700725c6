package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// AgentsAPI serves /api/v1/agents and the agents' tokens.
type AgentsAPI struct {
	store  models.Store
	agents AgentWriter
	tokens TokenManager
	stats  AgentStatsReader
	now    models.Clock
}

// NewAgentsAPI returns the agents endpoints over svc.
func NewAgentsAPI(store models.Store, agents AgentWriter, tokens TokenManager, stats AgentStatsReader, now models.Clock) *AgentsAPI {
	return &AgentsAPI{store: store, agents: agents, tokens: tokens, stats: stats, now: now}
}

// agentInput is the body of POST /agents.
type agentInput struct {
	Name        string              `json:"name"`
	Kind        string              `json:"kind"`
	Roles       []string            `json:"roles"`
	Command     string              `json:"command"`
	Workdir     string              `json:"workdir"`
	Worktree    bool                `json:"worktree"`
	Target      string              `json:"target_branch"`
	Forge       string              `json:"forge"`
	Concurrency int                 `json:"concurrency"`
	Password    string              `json:"password"`
	Sandbox     models.AgentSandbox `json:"sandbox"`
	PassEnv     []string            `json:"pass_env"`
	DailyBudget *contract.Budget    `json:"daily_budget"`
}

// agentPatch is the body of PATCH /agents/{name}: the fields to change, each left as
// it is when absent.
type agentPatch struct {
	Roles       *[]string            `json:"roles"`
	Command     *string              `json:"command"`
	Workdir     *string              `json:"workdir"`
	Worktree    *bool                `json:"worktree"`
	Forge       *string              `json:"forge"` // "" names none
	Concurrency *int                 `json:"concurrency"`
	Disabled    *bool                `json:"disabled"`
	Sandbox     *models.AgentSandbox `json:"sandbox"`
	PassEnv     *[]string            `json:"pass_env"`
	// DailyBudget replaces the agent's daily cap; {} removes it.
	DailyBudget *contract.Budget `json:"daily_budget"`
}

// List answers GET /agents. Commands, workdirs and sandbox settings are shown to
// admins only.
func (h *AgentsAPI) List(c echo.Context) error {
	agents, err := h.store.ListAgents(c.Request().Context())
	if err != nil {
		return err
	}
	viewer := Actor(c)
	out := make([]models.Agent, len(agents))
	for i := range agents {
		out[i] = agents[i].VisibleTo(viewer)
	}
	return c.JSON(http.StatusOK, map[string]any{"agents": out})
}

// Create answers POST /agents (admins only).
func (h *AgentsAPI) Create(c echo.Context) error {
	var in agentInput
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	a := in.agent()
	if err := h.agents.CreateAgent(c.Request().Context(), Actor(c), a, in.Password); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, a)
}

// Update answers PATCH /agents/{name} (admins only): the fields given change, and
// each change is an agent.changed event.
func (h *AgentsAPI) Update(c echo.Context) error {
	ctx := c.Request().Context()
	actor := Actor(c)
	var in agentPatch
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	a, err := h.store.GetAgentByName(ctx, c.Param("name"))
	if err != nil {
		return err
	}
	if a.Kind == models.KindSystem {
		return models.NotFound("agent", c.Param("name"))
	}
	in.apply(a)
	if err := h.agents.UpdateAgent(ctx, actor, a); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// passwordInput is the body of PUT /agents/{name}/password.
type passwordInput struct {
	Password        string `json:"password"`
	CurrentPassword string `json:"current_password"`
}

// SetPassword answers PUT /agents/{name}/password with 204: an admin sets or resets
// a human's dashboard password; a human changes their own, giving current_password.
// A password the rule refuses, or a wrong current one, is 422 naming the field.
func (h *AgentsAPI) SetPassword(c echo.Context) error {
	var in passwordInput
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := h.agents.SetPassword(c.Request().Context(), Actor(c), c.Param("name"), in.CurrentPassword, in.Password); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// Tokens answers GET /agents/{name}/tokens: the agent's tokens (never their secrets)
// with their status; an admin or the agent itself may list them.
func (h *AgentsAPI) Tokens(c echo.Context) error {
	tokens, err := h.tokens.ListTokens(c.Request().Context(), Actor(c), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": tokenViews(tokens, h.now())})
}

// RevokeToken answers DELETE /tokens/{id}: the token is refused from now on. An admin
// or the token's own agent may revoke it.
func (h *AgentsAPI) RevokeToken(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	t, err := h.tokens.RevokeToken(c.Request().Context(), Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenViews([]models.Token{*t}, h.now())[0])
}

// tokenView is a token as the API shows it: with its status.
type tokenView struct {
	models.Token
	Status string `json:"status"`
}

func tokenViews(ts []models.Token, now time.Time) []tokenView {
	out := make([]tokenView, len(ts))
	for i, t := range ts {
		out[i] = tokenView{Token: t, Status: t.Status(now)}
	}
	return out
}

// Stats answers GET /agents/{id}/stats?days=7|30 (default 7): the agent's scorecard
// over the last days UTC days, split by task role, with one bar per day (verified,
// blocked) and the histogram of its attempts' durations. {id} is the agent's number;
// a name that is not a number is looked up too. Another days is 422 naming the field.
// An attempt token is refused (403 attempt_token_scope) before any lookup, so it
// cannot tell which agent names exist by a 404.
func (h *AgentsAPI) Stats(c echo.Context) error {
	ctx := c.Request().Context()
	if err := Actor(c).Unscoped("read scorecards"); err != nil {
		return err
	}
	days, err := QueryStatsDays(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("name"), 10, 64)
	if err != nil {
		a, err := h.store.GetAgentByName(ctx, c.Param("name"))
		if err != nil {
			return err
		}
		id = a.ID
	}
	st, err := h.stats.AgentStats(ctx, Actor(c), id, days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// QueryStatsDays reads the days query parameter of a scorecard: 7 when absent, an
// EINVALID error naming the field and the allowed values when it is not 7 or 30.
func QueryStatsDays(c echo.Context) (int, error) {
	v := c.QueryParam("days")
	if v == "" {
		return models.StatsDays[0], nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, models.CheckStatsDays(0)
	}
	return n, models.CheckStatsDays(n)
}

// agent is the agent the body describes, as CreateAgent takes it.
func (in agentInput) agent() *models.Agent {
	return &models.Agent{Name: in.Name, Kind: models.AgentKind(in.Kind), Roles: in.Roles, Command: in.Command,
		Workdir: in.Workdir, Worktree: in.Worktree, TargetBranch: in.Target, Forge: in.Forge, Concurrency: in.Concurrency, Sandbox: in.Sandbox,
		PassEnv: in.PassEnv, DailyBudget: in.DailyBudget}
}

// apply changes the fields of a the patch gives.
func (in agentPatch) apply(a *models.Agent) {
	if in.Roles != nil {
		a.Roles = *in.Roles
	}
	if in.Command != nil {
		a.Command = *in.Command
	}
	if in.Workdir != nil {
		a.Workdir = *in.Workdir
	}
	if in.Worktree != nil {
		a.Worktree = *in.Worktree
	}
	if in.Forge != nil {
		a.Forge = *in.Forge
	}
	if in.Concurrency != nil {
		a.Concurrency = *in.Concurrency
	}
	if in.Disabled != nil {
		a.Disabled = *in.Disabled
	}
	if in.Sandbox != nil {
		a.Sandbox = *in.Sandbox
	}
	if in.PassEnv != nil {
		a.PassEnv = *in.PassEnv
	}
	if in.DailyBudget != nil {
		a.DailyBudget = in.DailyBudget
		if a.DailyBudget.IsZero() {
			a.DailyBudget = nil
		}
	}
}
