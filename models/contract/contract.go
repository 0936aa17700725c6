package contract

import (
	"time"
)

// Contract is fixed before delegation: what the worker must leave behind (Completion),
// how the work is verified (Verification), and whether a reviewer agent looks at the
// artifact (Review). It is stored with the task and rendered in the worker's brief.
type Contract struct {
	Completion   Completion   `json:"completion" yaml:"completion"`
	Verification Verification `json:"verification" yaml:"verification"`
	Review       *Review      `json:"review,omitempty" yaml:"review,omitempty"`
	// Budget caps what all the task's attempts may spend; nil: no cap.
	Budget *Budget `json:"budget,omitempty" yaml:"budget,omitempty"`
}

// CompletionType is what the mechanical check looks for.
type CompletionType string

// The completion types.
const (
	CompletionFile   CompletionType = "file"   // a file at Path, non-empty, at least MinLength bytes
	CompletionSignal CompletionType = "signal" // a JSON file at Path whose "signal" field equals Signal
	CompletionNone   CompletionType = "none"   // a clean exit is enough
)

// Completion is the completion contract.
type Completion struct {
	Type          CompletionType `json:"type,omitempty" yaml:"type,omitempty"`
	Path          string         `json:"path,omitempty" yaml:"path,omitempty"` // relative to the task workspace; may use {task_id}
	MinLength     int            `json:"min_length,omitempty" yaml:"min_length,omitempty"`
	Signal        string         `json:"signal,omitempty" yaml:"signal,omitempty"`
	DoneToken     string         `json:"done_token,omitempty" yaml:"done_token,omitempty"` // must appear in the worker's output
	Verify        []string       `json:"verify,omitempty" yaml:"verify,omitempty"`         // commands that must exit 0 in the workspace
	VerifyTimeout Duration       `json:"verify_timeout,omitempty" yaml:"verify_timeout,omitempty"`
	Evaluate      string         `json:"evaluate,omitempty" yaml:"evaluate,omitempty"` // semantic criteria for the evaluator
	MaxAttempts   int            `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	Timeout       Duration       `json:"timeout,omitempty" yaml:"timeout,omitempty"`   // per worker attempt
	Cooldown      Duration       `json:"cooldown,omitempty" yaml:"cooldown,omitempty"` // between attempts (Ralph mode)
	Clean         bool           `json:"clean,omitempty" yaml:"clean,omitempty"`       // workspace must have no uncommitted changes
	Checklist     *Checklist     `json:"checklist,omitempty" yaml:"checklist,omitempty"`

	// zeroMaxAttempts records that the contract was read with max_attempts (or
	// max_iterations) given as 0, which Validate refuses instead of taking it for
	// "the default" like an omitted one. Only the codec sets it.
	zeroMaxAttempts bool
}

// Checklist asks that a Markdown file in the workspace has at least Count checked
// boxes ("- [x]").
type Checklist struct {
	Path  string `json:"path" yaml:"path"`
	Count int    `json:"count" yaml:"count"`
}

// Review asks for an artifact review by an agent with Role: REVIEW_PASS or REVIEW_FAIL
// on the reviewer's last line, at most MaxRounds rounds. When lists the triggers:
// "always", "phase" (first task of a new phase), "every" (every Every-th task),
// "final" (last step of a run).
type Review struct {
	Role      string   `json:"role" yaml:"role"`
	When      []string `json:"when,omitempty" yaml:"when,omitempty"`
	Every     int      `json:"every,omitempty" yaml:"every,omitempty"`
	MaxRounds int      `json:"max_rounds,omitempty" yaml:"max_rounds,omitempty"`
	// OnExhausted says what happens when the last round fails: "block" (the default)
	// or "proceed_with_warnings".
	OnExhausted string `json:"on_exhausted,omitempty" yaml:"on_exhausted,omitempty"`
}

// VerificationType classifies a task before delegation.
type VerificationType string

// The verification types. Auto is resolved to one of the others by generation before
// the task is delegated; a stored, delegated task never has type auto.
const (
	VerifyVerifiable VerificationType = "verifiable"
	VerifyAdvisory   VerificationType = "advisory"
	VerifySkip       VerificationType = "skip"
	VerifyAuto       VerificationType = "auto"
)

// Verification is the verification contract.
type Verification struct {
	Type          VerificationType `json:"type,omitempty" yaml:"type,omitempty"`
	Criteria      []Criterion      `json:"criteria,omitempty" yaml:"criteria,omitempty"`
	GeneratedFrom string           `json:"generated_from,omitempty" yaml:"generated_from,omitempty"` // auto | user | template
	GeneratedAt   *time.Time       `json:"generated_at,omitempty" yaml:"generated_at,omitempty"`
	// Workspace says whether the criteria still wait for the task's workspace:
	// pending (the workspace's stacks add their criteria before the first attempt),
	// pending-commands (criteria named only by an activity get their stack's
	// command), detected (done; Stacks names what matched), or empty (nothing to
	// wait for). See ResolveContract and AddStackCriteria.
	Workspace string `json:"workspace,omitempty" yaml:"workspace,omitempty"`
	// Stacks are the stacks the task's workspace matched when its criteria were
	// completed (go, node, …); empty for a workspace that matched none.
	Stacks []string `json:"stacks,omitempty" yaml:"stacks,omitempty"`
	// Protect adds globs of protected paths to those of the workspace's stacks (see
	// ProtectPatternProblem): the judge's view restores them from the base revision.
	Protect []string `json:"protect,omitempty" yaml:"protect,omitempty"`
	// TestsMayChange skips the restore, for tasks whose job is to write or change
	// tests; the report of changed protected files and the test floor still hold.
	TestsMayChange bool `json:"tests_may_change,omitempty" yaml:"tests_may_change,omitempty"`
	// DependenciesMayChange lets the worker change the dependencies the tests import:
	// the stacks' dependency pins (lockfiles, dependency lists, go.mod's require and
	// replace, vendor trees; Stack.Pins) are then not restored from the base, the
	// judge installs the candidate's dependencies itself (Stack.Install), and the
	// report lists those that changed. False, the pins are protected like the tests.
	// Only the roles that may set commands may set it.
	DependenciesMayChange bool `json:"dependencies_may_change,omitempty" yaml:"dependencies_may_change,omitempty"`
	// HeldOut are tests the worker never sees, added to the judge's view. Only the
	// roles that may set commands may set them, and only they read them back (see
	// Contract.Redacted).
	HeldOut []HeldOutTest `json:"held_out,omitempty" yaml:"held_out,omitempty"`
	// HeldOutCount is how many held-out tests a redacted contract had; never stored.
	HeldOutCount int `json:"held_out_count,omitempty" yaml:"-"`
}

// Criterion is one verification criterion. Command, when set, is what the runner runs
// for it; otherwise the project rules map Activity to a command.
type Criterion struct {
	Activity    string `json:"activity" yaml:"activity"`
	Description string `json:"description" yaml:"description"`
	Pattern     string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	Timing      string `json:"timing,omitempty" yaml:"timing,omitempty"` // immediate | deferred
	Command     string `json:"command,omitempty" yaml:"command,omitempty"`
	// Stack is the stack whose rules gave the command (go, python, …), when one did.
	Stack string `json:"stack,omitempty" yaml:"stack,omitempty"`
	// Tools are the programs the command runs, which must be on PATH where it runs
	// (the readiness check's list); from the stack's rules.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
}

// Rules are the editable rules contract generation uses: the part of the project's
// rules (models.Rules embeds it) that says which checks a task gets.
type Rules struct {
	// Activities maps an activity (unit-test, typecheck, lint, e2e, …) to the command
	// that checks it in the workspace.
	Activities map[string]string `json:"activities" yaml:"activities"`
	// FilePatterns maps expected files to the activities they call for.
	FilePatterns []FilePatternRule `json:"file_patterns" yaml:"file_patterns"`
	// Always lists activities every verifiable task gets (and a task classified as
	// skip, as its minimal checks).
	Always []string `json:"always" yaml:"always"`
	// Stacks are the kinds of workspace generation knows (Go, Node, Python, …): how
	// each is detected, the commands that check it, its protected paths and how to
	// read its test results. See Stack.
	Stacks []Stack `json:"stacks,omitempty" yaml:"stacks,omitempty"`
	// AdvisoryWords and SkipWords classify descriptions: words (matching their common
	// forms) or short phrases, case-insensitive.
	AdvisoryWords []string `json:"advisory_words" yaml:"advisory_words"`
	SkipWords     []string `json:"skip_words" yaml:"skip_words"`
}

// FilePatternRule maps a glob of expected files to activities.
type FilePatternRule struct {
	Pattern    string   `json:"pattern" yaml:"pattern"`
	Activities []string `json:"activities" yaml:"activities"`
	Timing     string   `json:"timing,omitempty" yaml:"timing,omitempty"`
}

// Duration is a time.Duration that reads and writes as text ("30m", "90s").
type Duration struct{ time.Duration }
