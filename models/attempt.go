package models

import "time"

// Check stages, in the order the runner runs them (cheapest first).
const (
	StageProcess       = "process"       // the worker exited cleanly within its timeout
	StageContradiction = "contradiction" // no admission of failure next to a completion claim
	StageDoneToken     = "done_token"    // the done token appears in the output
	StageMechanical    = "mechanical"    // the file / signal / none contract
	StageVerify        = "verify"        // verify commands and criteria
	StageWorkspace     = "workspace"     // uncommitted changes, checklist count
	StageEvaluation    = "evaluation"    // the semantic evaluator
	StageReview        = "review"        // artifact review by a reviewer agent
	StageInfra         = "infrastructure"
)

// Verdicts of one check.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictSkipped = "skipped"
	VerdictError   = "error" // the check itself could not run: an infrastructure failure
)

// Outcomes of an attempt.
const (
	OutcomeRunning = "running"
	OutcomePassed  = "passed"
	OutcomeFailed  = "failed"
	OutcomeInfra   = "infrastructure" // did not use up the budget
)

// Attempt is one worker invocation and the verdict of every check layer on it.
type Attempt struct {
	ID        int64             `json:"id"`
	TaskID    int64             `json:"task_id"`
	Number    int               `json:"number"`
	AgentID   int64             `json:"agent_id"`
	RunnerID  string            `json:"runner_id"`
	Outcome   string            `json:"outcome"`
	Stage     string            `json:"stage,omitempty"`     // the stage that failed
	Diagnosis string            `json:"diagnosis,omitempty"` // why it failed, precise enough to fix
	Checks    []CheckResult     `json:"checks"`
	Criteria  []CriterionResult `json:"criteria,omitempty"`
	// Judge is what the judge's view found: protected files changed, the test floor,
	// held-out tests. Nil for attempts that ran no verify commands.
	Judge *JudgeReport `json:"judge,omitempty"`
	// Deliverable is what a verified attempt of a task without a git workspace left
	// (the files it added or changed, kept by the runner). Nil otherwise.
	Deliverable *Deliverable `json:"deliverable,omitempty"`
	// Usage is what the attempt used (worker and evaluator): tokens, cost, turns,
	// model, session. Nil when nothing is known.
	Usage *Usage `json:"usage"`
	// Network is what the attempt's processes connected to through the egress proxy;
	// nil when its runs had no private network.
	Network *NetworkLog `json:"network,omitempty"`
	// ReservedUSD and ReservedTokens are what the attempt held of its budgets while it
	// ran; finished, its usage counts instead.
	ReservedUSD    *float64 `json:"reserved_usd,omitempty"`
	ReservedTokens *int64   `json:"reserved_tokens,omitempty"`
	ExitCode       int      `json:"exit_code"`
	OutputTail     string   `json:"output_tail,omitempty"` // bounded tail of stdout+stderr
	OutputHash     string   `json:"output_hash,omitempty"` // SHA-384 of the verified output
	LogPath        string   `json:"log_path,omitempty"`
	Brief          string   `json:"brief,omitempty"`
	// Triage marks the one extra attempt a triage gave the task, with its approach
	// in the brief.
	Triage     bool       `json:"triage,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// CheckResult is the verdict of one check layer on one attempt.
type CheckResult struct {
	Stage      string `json:"stage"`
	Verdict    string `json:"verdict"`
	Diagnosis  string `json:"diagnosis,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// CriterionResult is the result of one verification criterion or verify command.
type CriterionResult struct {
	Activity   string `json:"activity"`
	Command    string `json:"command,omitempty"`
	Status     string `json:"status"` // pass | fail | skipped
	Error      string `json:"error,omitempty"`
	Attempts   int    `json:"attempts"`
	DurationMS int64  `json:"duration_ms"`
}
