package runner

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// The narrow interfaces the pool depends on, declared where they are used: the
// methods of each aggregate of models.Service the pool calls, and nothing else.

// taskMover is what the pool needs of the task aggregate (models.TaskService): walking a claimed or settled task through its moves.
type taskMover interface {
	Walk(ctx context.Context, tx models.Tx, actor *models.Agent, t *models.Task, moves ...models.Move) error
}

// goalDeferrer is what the pool needs of the goal aggregate (models.GoalService): running a goal's deferred criteria.
type goalDeferrer interface {
	ClaimDeferred(ctx context.Context, runner *models.Agent, id int64, runnerID string) (g *models.Goal, ok bool, err error)
	RecordDeferred(ctx context.Context, runner *models.Agent, id int64, runnerID string, results []models.CriterionResult, diagnosis string, output string) (*models.Goal, error)
}

// agentPauser is what the pool needs of the agent aggregate (models.AgentService): its own agent, and pausing one whose command could not run.
type agentPauser interface {
	RunnerAgent(ctx context.Context) (*models.Agent, error)
	PauseAgent(ctx context.Context, tx models.Tx, runner *models.Agent, agentID int64, t *models.Task, p models.AgentPausedPayload) error
}

// attemptTokens is what the pool needs of the token aggregate (models.TokenService): the attempt tokens it gives workers.
type attemptTokens interface {
	IssueAttemptTokenTx(ctx context.Context, tx models.Tx, agentID int64, taskID int64, attemptNo int, ttl time.Duration) (secret string, tokenID int64, err error)
	RevokeAttemptTokens(ctx context.Context, tokenIDs []int64) error
	PruneAttemptTokens(ctx context.Context) (int64, error)
}

// rulesReader is what the pool needs of the template aggregate (models.TemplateService): the project's rules.
type rulesReader interface {
	Rules(ctx context.Context) (models.ProjectRules, error)
}

// attemptSettler is what the pool needs of the runner's side of the rules (models.AttemptService): settling, blocking and budgeting attempts.
type attemptSettler interface {
	BudgetLimits(ctx context.Context, tx models.Tx, t *models.Task, agent *models.Agent) ([]models.BudgetLimit, error)
	WarnBudgets(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, agent *models.Agent, cost float64) error
	BlockOnBudget(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, limit models.BudgetLimit) error
	BlockNotReady(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, missing []string) error
	BlockOnStepConflict(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, c models.StepConflict) (*models.Task, error)
	FixStackCriteria(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, facts contract.WorkspaceFacts) error
	RunnerPassJudged(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, summary string, outputHash string, judge *models.JudgeReport, advisory bool) error
	BlockTask(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, attempts []models.BlockedAttempt) error
	BlockImpossibleTask(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, attempt int, reason string, round []models.BlockedAttempt) error
	AddReviewFixTask(ctx context.Context, tx models.Tx, runner *models.Agent, t *models.Task, f models.ReviewFix) (*models.Task, error)
}

// attestationReader is what the pool needs of the ledger aggregate
// (models.LedgerService): a verified task's attestation, to attach to its commit.
type attestationReader interface {
	TaskAttestation(ctx context.Context, taskID int64) (*models.LedgerEntry, bool, error)
}

// services holds the aggregates the pool calls, each behind its narrow interface;
// the field names are models.Service's, so a call reads p.svc.Attempts.BlockTask as
// it would on the service.
type services struct {
	Tasks     taskMover
	Goals     goalDeferrer
	Agents    agentPauser
	Tokens    attemptTokens
	Templates rulesReader
	Attempts  attemptSettler
	Ledger    attestationReader
}

// newServices takes from svc the aggregates the pool calls.
func newServices(svc *models.Service) services {
	return services{Tasks: svc.Tasks, Goals: svc.Goals, Agents: svc.Agents, Tokens: svc.Tokens, Templates: svc.Templates, Attempts: svc.Attempts, Ledger: svc.Ledger}
}
