package models

// The aggregates of the governance service. Each holds the methods of one aggregate
// and embeds the shared core (store, ledger composer, clock, event writer); the
// unexported links name the other aggregates its changes reach into, which NewService
// wires.

// TaskService creates tasks and moves them through their lifecycle (TaskAction, Apply,
// Walk), with the questions, advisory prompts, drift and budget raises that act on one
// task.
type TaskService struct {
	*core
	goals     *GoalService     // a move changes the task's goal
	inbox     *InboxService    // a move resolves the task's inbox items
	ledger    *LedgerService   // acceptance writes, reopening revokes, the task's completion
	templates *TemplateService // the project's rules
}

// GoalService creates goals, verifies and rejects them, links tasks to them, keeps
// their state in step with their tasks and runs their deferred criteria.
type GoalService struct {
	*core
	ledger    *LedgerService   // verification and revocation of goal.verified
	tasks     *TaskService     // a rejection's fix tasks
	templates *TemplateService // the project's rules for fix tasks
}

// AgentService creates and changes agents, finds the runner, and pauses an agent the
// runner stopped.
type AgentService struct {
	*core
}

// TokenService issues, checks and revokes API tokens and the runner's attempt tokens,
// and keeps the login lockout.
type TokenService struct {
	*core
}

// TemplateService saves templates and the project's rules, reads their history,
// previews and starts runs, and checks a workspace against the rules.
type TemplateService struct {
	*core
	tasks *TaskService // a run's tasks
}

// InboxService resolves inbox items and sweeps overdue ones (escalation, expired
// questions).
type InboxService struct {
	*core
	agents   *AgentService   // the runner, who acts for a sweep
	attempts *AttemptService // an expired question blocks its task
}

// LedgerService writes and revokes the ledger entries of tasks and goals and reads
// the standing ones.
type LedgerService struct {
	*core
}

// AttemptService is the runner's side of the rules: it settles attempts (pass, block),
// blocks tasks before an attempt (readiness, budget, step conflicts), fixes stack
// criteria and adds review-fix tasks, in the runner's transaction.
type AttemptService struct {
	*core
	tasks *TaskService // the moves settling makes
}

// MergeService lands verified tasks and goals and reports a task's branch.
type MergeService struct {
	*core
	tasks *TaskService // a conflict's fix task
}

// StatsService reads scorecards, goal progress and model spend.
type StatsService struct {
	*core
}
