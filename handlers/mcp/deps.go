package mcp

import (
	"context"

	"github.com/countersign/countersign/models"
)

// The narrow interfaces the MCP endpoint depends on, declared where they are used;
// New wires the aggregates of models.Service into them.

// TaskActions is what the MCP tools need of the task aggregate (models.TaskService).
type TaskActions interface {
	CreateTask(ctx context.Context, actor *models.Agent, spec models.TaskSpec) (*models.Task, error)
	AskQuestion(ctx context.Context, actor *models.Agent, taskID int64, text string) (*models.Task, error)
	TaskAction(ctx context.Context, actor *models.Agent, id int64, act models.Action, in models.ActionInput) (*models.Task, error)
	NarrowConflict(ctx context.Context, actor *models.Agent, id int64, err error) error
	ResolveAdvisoryPrompt(ctx context.Context, actor *models.Agent, id int64, d models.AdvisoryDecision) (*models.Task, error)
}

// GoalActions is what the MCP tools need of the goal aggregate (models.GoalService).
type GoalActions interface {
	CreateGoal(ctx context.Context, actor *models.Agent, g *models.Goal) error
	LinkTaskToGoal(ctx context.Context, actor *models.Agent, taskID int64, goalID int64) (*models.Task, error)
	GoalStatus(ctx context.Context, id int64) (*models.GoalStatus, error)
	VerifyGoal(ctx context.Context, actor *models.Agent, id int64, notes string) (*models.Goal, error)
	RejectGoal(ctx context.Context, actor *models.Agent, id int64, reason string, fixes []models.TaskSpec) (*models.GoalStatus, error)
}

// Authenticator is what the MCP endpoint's bearer check needs of the token aggregate (models.TokenService).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*models.Agent, error)
}

// services is what the tools reach through: the store they read and the two
// aggregates they change.
type services struct {
	store models.Store
	Tasks TaskActions
	Goals GoalActions
}

// Store returns the store the tools read.
func (s services) Store() models.Store { return s.store }
