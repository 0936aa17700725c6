package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// AgentsAPI serves /api/v1/agents.
type AgentsAPI struct{ svc *models.Service }

// NewAgentsAPI returns the agents endpoints over svc.
func NewAgentsAPI(svc *models.Service) *AgentsAPI { return &AgentsAPI{svc: svc} }

// agentInput is the body of POST /agents.
type agentInput struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Roles       []string `json:"roles"`
	Command     string   `json:"command"`
	Workdir     string   `json:"workdir"`
	Worktree    bool     `json:"worktree"`
	Concurrency int      `json:"concurrency"`
	Password    string   `json:"password"`
}

// List answers GET /agents.
func (h *AgentsAPI) List(c echo.Context) error {
	agents, err := h.svc.Store().ListAgents(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"agents": agents})
}

// Create answers POST /agents (admins only).
func (h *AgentsAPI) Create(c echo.Context) error {
	var in agentInput
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	a := &models.Agent{Name: in.Name, Kind: models.AgentKind(in.Kind), Roles: in.Roles, Command: in.Command,
		Workdir: in.Workdir, Worktree: in.Worktree, Concurrency: in.Concurrency}
	if err := h.svc.CreateAgent(c.Request().Context(), Actor(c), a, in.Password); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, a)
}
