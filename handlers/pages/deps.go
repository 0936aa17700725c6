package pages

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// The narrow interfaces the pages depend on, declared where they are used: of each
// aggregate of models.Service, the methods the pages call.

// taskActions is what the pages need of the task aggregate (models.TaskService).
type taskActions interface {
	TaskAction(ctx context.Context, actor *models.Agent, id int64, act models.Action, in models.ActionInput) (*models.Task, error)
	ActionsFor(ctx context.Context, actor *models.Agent, t *models.Task, actions []string) ([]string, error)
	ResolveAdvisoryPrompt(ctx context.Context, actor *models.Agent, id int64, d models.AdvisoryDecision) (*models.Task, error)
	RaiseTaskBudget(ctx context.Context, actor *models.Agent, id int64, b contract.Budget) (*models.Task, error)
	ScheduleCanary(ctx context.Context, actor *models.Agent, spec models.CanarySpec) (*models.Task, error)
}

// goalActions is what the pages need of the goal aggregate (models.GoalService).
type goalActions interface {
	CreateGoal(ctx context.Context, actor *models.Agent, g *models.Goal) error
	VerifyGoal(ctx context.Context, actor *models.Agent, id int64, notes string) (*models.Goal, error)
	RejectGoal(ctx context.Context, actor *models.Agent, id int64, reason string, fixes []models.TaskSpec) (*models.GoalStatus, error)
	SetGoalBudget(ctx context.Context, actor *models.Agent, id int64, b *contract.Budget) (*models.Goal, error)
}

// agentWriter is what the pages need of the agent aggregate (models.AgentService).
type agentWriter interface {
	CreateAgent(ctx context.Context, actor *models.Agent, a *models.Agent, password string) error
	UpdateAgent(ctx context.Context, actor *models.Agent, a *models.Agent) error
	SetPassword(ctx context.Context, actor *models.Agent, name, current, password string) error
}

// tokenActions is what the pages need of the token aggregate (models.TokenService): an agent's tokens and the login lockout.
type tokenActions interface {
	IssueToken(ctx context.Context, actor *models.Agent, agentName string, name string, ttl time.Duration) (string, *models.Token, error)
	RevokeToken(ctx context.Context, actor *models.Agent, id int64) (*models.Token, error)
	LoginLockedUntil(ctx context.Context, name string) (time.Time, error)
	LoginFailed(ctx context.Context, name string) (time.Time, error)
	LoginSucceeded(ctx context.Context, name string) error
}

// templateActions is what the pages need of the template aggregate (models.TemplateService): templates, runs and the project's rules.
type templateActions interface {
	Rules(ctx context.Context) (models.ProjectRules, error)
	SaveRules(ctx context.Context, actor *models.Agent, r *models.ProjectRules) error
	SaveTemplate(ctx context.Context, actor *models.Agent, t *models.Template) error
	StartRun(ctx context.Context, actor *models.Agent, goalID int64, name string, version int, params map[string]string) (*models.Run, []models.Task, error)
	PreviewStepTask(ctx context.Context, t *models.Template, i int, id int64) (*models.Task, error)
	RulesHistory(ctx context.Context, limit int) ([]models.HistoryEntry, error)
	TemplateHistory(ctx context.Context, name string, limit int) ([]models.HistoryEntry, error)
	CheckWorkspace(ctx context.Context, actor *models.Agent, dir string, lookPath func(string) (string, error)) (*models.WorkspaceCheck, error)
}

// inboxResolver is what the pages need of the inbox aggregate (models.InboxService).
type inboxResolver interface {
	ResolveInboxItem(ctx context.Context, actor *models.Agent, itemID int64, note string) (*models.InboxItem, error)
}

// ledgerReader is what the pages need of the ledger aggregate (models.LedgerService).
type ledgerReader interface {
	StandingCompletion(ctx context.Context, taskID int64) (*models.LedgerEntry, error)
	TaskAttestation(ctx context.Context, taskID int64) (*models.LedgerEntry, bool, error)
}

// merger is what the pages need of the merge aggregate (models.MergeService).
type merger interface {
	MergeTask(ctx context.Context, actor *models.Agent, id int64, lander models.Lander) (*models.Landed, error)
	MergeGoal(ctx context.Context, actor *models.Agent, id int64, lander models.Lander) ([]models.Landed, error)
	BranchReport(ctx context.Context, t *models.Task, lander models.Lander) (*models.BranchReport, error)
	GoalMergeable(ctx context.Context, id int64, lander models.Lander) (models.Mergeability, error)
}

// statsReader is what the pages need of the statistics (models.StatsService).
type statsReader interface {
	AgentStats(ctx context.Context, viewer *models.Agent, id int64, days int) (*models.AgentStats, error)
	ScoreBoard(ctx context.Context, viewer *models.Agent, days int) (*models.ScoreBoard, error)
	GoalProgress(ctx context.Context, viewer *models.Agent, id int64) (*models.GoalProgress, error)
	ModelSpend(ctx context.Context, viewer *models.Agent, days int, agentID int64) (*models.ModelSpend, error)
	CanaryRuns(ctx context.Context, viewer *models.Agent, agentID int64) ([]models.CanaryRun, error)
}

// searcher is what the pages need of the search (models.SearchService).
type searcher interface {
	Search(ctx context.Context, viewer *models.Agent, q string, limit int) (*models.SearchResults, error)
}

// queueReader is what the pages need of the queue (models.QueueService).
type queueReader interface {
	WaitingOn(ctx context.Context, viewer *models.Agent) ([]models.QueueItem, error)
	Count(ctx context.Context, viewer *models.Agent) (int, error)
	WaitingFor(ctx context.Context, t *models.Task) (*models.Waiting, error)
}

// services holds the aggregates the pages call, each behind its narrow interface,
// with the store they read and the service's clock; the field names are
// models.Service's, so a call reads p.svc.Tasks.TaskAction as it would on the service.
type services struct {
	Tasks     taskActions
	Goals     goalActions
	Agents    agentWriter
	Tokens    tokenActions
	Templates templateActions
	Inbox     inboxResolver
	Ledger    ledgerReader
	Merges    merger
	Stats     statsReader
	Search    searcher
	Queue     queueReader

	store models.Store
	now   models.Clock
}

// newServices takes from svc the aggregates the pages call.
func newServices(svc *models.Service) services {
	return services{
		Tasks: svc.Tasks, Goals: svc.Goals, Agents: svc.Agents, Tokens: svc.Tokens, Templates: svc.Templates,
		Inbox: svc.Inbox, Ledger: svc.Ledger, Merges: svc.Merges, Stats: svc.Stats, Search: svc.Search, Queue: svc.Queue,
		store: svc.Store(), now: svc.Now,
	}
}

// Store returns the store the pages read.
func (s services) Store() models.Store { return s.store }

// Now returns the service's current time.
func (s services) Now() time.Time { return s.now() }
