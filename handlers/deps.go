package handlers

import (
	"context"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// The narrow interfaces the API handlers depend on, each declared here, where it is
// used, with only the methods its handler calls; the aggregates of models.Service
// satisfy them (routes.go wires them).

// TaskActions is what the task API needs of the task aggregate (models.TaskService): creating tasks and moving them.
type TaskActions interface {
	CreateTask(ctx context.Context, actor *models.Agent, spec models.TaskSpec) (*models.Task, error)
	TaskAction(ctx context.Context, actor *models.Agent, id int64, act models.Action, in models.ActionInput) (*models.Task, error)
	NarrowConflict(ctx context.Context, actor *models.Agent, id int64, err error) error
	AskQuestion(ctx context.Context, actor *models.Agent, taskID int64, text string) (*models.Task, error)
}

// GoalLinker is what the task API needs of the goal aggregate (models.GoalService).
type GoalLinker interface {
	LinkTaskToGoal(ctx context.Context, actor *models.Agent, taskID int64, goalID int64) (*models.Task, error)
}

// AdvisoryResolver is what the advisory API needs of the task aggregate (models.TaskService).
type AdvisoryResolver interface {
	ResolveAdvisoryPrompt(ctx context.Context, actor *models.Agent, id int64, d models.AdvisoryDecision) (*models.Task, error)
}

// AgentWriter is what the agents API needs of the agent aggregate (models.AgentService).
type AgentWriter interface {
	CreateAgent(ctx context.Context, actor *models.Agent, a *models.Agent, password string) error
	UpdateAgent(ctx context.Context, actor *models.Agent, a *models.Agent) error
	SetPassword(ctx context.Context, actor *models.Agent, name, current, password string) error
}

// TokenManager is what the agents API needs of the token aggregate (models.TokenService): an agent's tokens.
type TokenManager interface {
	ListTokens(ctx context.Context, actor *models.Agent, agentName string) ([]models.Token, error)
	RevokeToken(ctx context.Context, actor *models.Agent, id int64) (*models.Token, error)
}

// AgentStatsReader is what the agents API needs of the statistics (models.StatsService).
type AgentStatsReader interface {
	AgentStats(ctx context.Context, viewer *models.Agent, id int64, days int) (*models.AgentStats, error)
}

// TaskBudgeter is what the budget API needs of the task aggregate (models.TaskService).
type TaskBudgeter interface {
	RaiseTaskBudget(ctx context.Context, actor *models.Agent, id int64, b contract.Budget) (*models.Task, error)
}

// GoalBudgeter is what the budget API needs of the goal aggregate (models.GoalService).
type GoalBudgeter interface {
	SetGoalBudget(ctx context.Context, actor *models.Agent, id int64, b *contract.Budget) (*models.Goal, error)
}

// GoalDecisions is what the goals API needs of the goal aggregate (models.GoalService).
type GoalDecisions interface {
	CreateGoal(ctx context.Context, actor *models.Agent, g *models.Goal) error
	GoalStatus(ctx context.Context, id int64) (*models.GoalStatus, error)
	VerifyGoal(ctx context.Context, actor *models.Agent, id int64, notes string) (*models.Goal, error)
	RejectGoal(ctx context.Context, actor *models.Agent, id int64, reason string, fixes []models.TaskSpec) (*models.GoalStatus, error)
}

// RunStarter is what the goals API needs of the template aggregate (models.TemplateService): starting a run on a goal.
type RunStarter interface {
	StartRun(ctx context.Context, actor *models.Agent, goalID int64, name string, version int, params map[string]string) (*models.Run, []models.Task, error)
}

// InboxResolver is what the inbox API needs of the inbox aggregate (models.InboxService).
type InboxResolver interface {
	ResolveInboxItem(ctx context.Context, actor *models.Agent, itemID int64, note string) (*models.InboxItem, error)
}

// Merger is what the merge API needs of the merge aggregate (models.MergeService).
type Merger interface {
	MergeTask(ctx context.Context, actor *models.Agent, id int64, lander models.Lander) (*models.Landed, error)
	MergeGoal(ctx context.Context, actor *models.Agent, id int64, lander models.Lander) ([]models.Landed, error)
	TaskBranch(ctx context.Context, actor *models.Agent, id int64, lander models.Lander) (*models.BranchReport, error)
}

// TemplateWriter is what the templates API needs of the template aggregate (models.TemplateService): templates and the project's rules.
type TemplateWriter interface {
	SaveTemplate(ctx context.Context, actor *models.Agent, t *models.Template) error
	Rules(ctx context.Context) (models.ProjectRules, error)
	SaveRules(ctx context.Context, actor *models.Agent, r *models.ProjectRules) error
}

// Authenticator is what BearerAuth needs of the token aggregate (models.TokenService).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*models.Agent, error)
}

// CanaryScheduler is what the canary API needs of the task aggregate (models.TaskService).
type CanaryScheduler interface {
	ScheduleCanary(ctx context.Context, actor *models.Agent, spec models.CanarySpec) (*models.Task, error)
}

// HonestyReader is what the canary and scoreboard API needs of the statistics
// (models.StatsService).
type HonestyReader interface {
	CanaryRuns(ctx context.Context, viewer *models.Agent, agentID int64) ([]models.CanaryRun, error)
	ScoreBoard(ctx context.Context, viewer *models.Agent, days int) (*models.ScoreBoard, error)
}

// AttestationReader is what the attestation API needs of the ledger aggregate
// (models.LedgerService): a task's newest attestation and whether it was revoked.
type AttestationReader interface {
	TaskAttestation(ctx context.Context, taskID int64) (*models.LedgerEntry, bool, error)
}
