package runner

import (
	"context"
	"log/slog"

	"github.com/countersign/countersign/models"
)

// confiner confines the worker and every run after it (confine.go): the sandbox
// policy of each run, its private network and egress proxy (network.go), the model
// gateway's port (model_gateway.go), and the environment a run gets. It holds what it
// decided once at New and the attempts' temp dirs, and reads nothing from the store.
type confiner struct {
	cfg Config
	log *slog.Logger

	systemPaths []string // what every confined run may read: sandbox.SystemReadPaths, once
	private     bool     // confined runs get a private network (privateNetwork), decided once
	gwPort      uint16   // the model gateway's port (gatewayPort), 0 without one
	tmpDirs     *tmpDirs // attempts' private temp dirs
}

// judging is the judge's view of an attempt (judge*.go): it snapshots the task's base
// and the worker's candidate into the judge's own store, checks them out in a view of
// its own, installs the candidate's dependencies, and runs the contract's commands
// there in a judge environment (judgeenv.go); readiness.go asks, before an attempt,
// whether the tools the contract needs are on the worker's and the judge's path.
type judging struct {
	*common
	conf *confiner // how judged runs are confined
}

// checker runs the contract's check layers on an attempt, cheapest first
// (checks.go): the mechanical check, the judged commands in the judging's view, the
// semantic evaluation and the artifact review; a review round alone runs the review
// only (reviewAlone).
type checker struct {
	*common
	conf    *confiner
	judging *judging
	reviews *reviewing
}

// reviewing runs the artifact review (review.go): it picks a reviewer agent, runs it
// confined in a view of the candidate, and keeps the rounds of review and fix tasks
// going (review_fix.go).
type reviewing struct {
	*common
	conf *confiner // how reviewers are confined
}

// lander keeps the task branches (land.go): the branch a worktree task works on, the
// verified commit on it, and the push once the attempt is settled.
type lander struct {
	*common
}

// attemptStarter is what a claim needs of the attempt runner to prepare and begin a
// task's first attempt in its own transaction.
type attemptStarter interface {
	newAttempt(tr *taskRun) *attemptRun
	prepareReady(ctx context.Context, tr *taskRun, ar *attemptRun, rules func() (models.ProjectRules, error)) ([]string, error)
	recordStart(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun) error
	logNotReady(tr *taskRun, missing []string)
}
