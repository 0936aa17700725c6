package task

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the task page's model.
type View struct {
	Meta      layout.PageMeta
	CSRF      string
	ID        int64
	Title     string
	Brief     string
	Role      string
	State     string
	Override  bool // accepted without passing its checks: "verified (override)"
	GoalID    int64
	GoalTitle string
	Facts     []components.DefItem // assignee, builder, policies, reason, summary…
	// WaitingOn says who must act next when that is a person ("the tester role
	// (tess), to verify it"); "" while the runner or a worker has it.
	WaitingOn string
	// Impossible is the reason the task's worker gave for saying it cannot be done as
	// specified, while that claim waits for a person; "" otherwise.
	Impossible        string
	Contract          string               // models.RenderContract in plain words
	ContractFacts     []components.DefItem // the contract's key fields
	Timeline          []components.TimelineItem
	TimelineTruncated bool
	Attempts          []Attempt // oldest first
	Running           bool      // a worker is on it now: the live log is shown
	LiveText          string    // the newest attempt's output tail
	Actions           []ActionForm
	Agents            []components.Option
	Inbox             []InboxRow

	// HeldOut are the contract's held-out tests with their contents, set only for a
	// reader who may set them (the facts give everyone else their number).
	HeldOut []HeldOutFile
	// TestsChanged says the newest attempt changed protected files (tests, test
	// configuration): a warning beside the state, whatever the state.
	TestsChanged bool
	// Deliverable is the newest verified attempt's kept files, for a task without a
	// git worktree; nil when it kept none.
	Deliverable *components.DeliverableView
	// Output is the verified output file itself (never a server path), for the
	// person who decides on it; nil when the task has none.
	Output *components.OutputView
	// Budget is what the task spent and may spend.
	Budget BudgetView
	// Branch is where the task's work stands in its repository; nil for a task
	// without a git worktree of its own.
	Branch *Branch
	// Verification says how the task's standing completion was verified and whether
	// its work is still what was verified; nil for a task never verified.
	Verification *Verification
	// Hats are the hats each participant wore on the task (see models.WornOn), shown
	// with the timeline, whose entries name the hat of each move too.
	Hats []HatWearer
	// Review is the artifact review's warnings or the task a fix task fixes
	// (review.templ); nil when neither.
	Review *Review
}

// Verification is the verification card: the ledger's kind of the standing
// task.complete, the fingerprint's size, and the drift a recheck found.
type Verification struct {
	Kind          string // runner, advisory, override; "" when the ledger does not say
	Fingerprinted int    // files the fingerprint covers; 0: none to recheck
	Stale         bool
	Changed       string // the drift's paths, for a person
	CanRecheck    bool   // a lead or exec, a verified task with a fingerprint
	// Attestation says the standing completion has a signed attestation to download.
	Attestation bool
}

// Branch is a task's own branch against the target branch its work lands on.
type Branch struct {
	Name, Base, Commit, Target string
	Ahead, Behind              int
	TipVerified                bool // the tip is the verified tree: merge is allowed
	Merged                     bool // the target holds it all
	Gone                       bool // deleted (after its merge, or by hand)
	Unreadable                 bool // git could not say; the log says why
	Diff                       string
	DiffTruncated              bool
	CanMerge                   bool // a lead, and a verified commit not on the target yet
}

// status says in words where the branch stands.
func (b Branch) status() string {
	switch {
	case b.Unreadable:
		return "The branch could not be read."
	case b.Gone:
		return "The branch no longer exists (deleted after its merge, or by hand)."
	case b.Merged:
		return "Merged: " + b.Target + " holds the verified work."
	case b.Commit != "" && !b.TipVerified:
		return "The branch changed after verification: it cannot be merged until the change is verified."
	}
	return strconv.Itoa(b.Ahead) + " commit(s) ahead of " + b.Target + ", " + strconv.Itoa(b.Behind) + " behind."
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Attempt is one worker invocation with every check layer's verdict.
type Attempt struct {
	Number     int
	Agent      string
	Outcome    string
	Stage      string
	Diagnosis  string
	SameAs     int // an earlier attempt that failed at Stage in the same words; 0 if none
	ExitCode   int
	StartedAt  time.Time
	Duration   string
	Checks     []Check
	Criteria   []Criterion
	Judge      *Judge // nil: the attempt ran no verify commands
	OutputTail string
	Usage      string // what it used, in words; "" when nothing is known
	UsageNote  string // why part of it is unknown
	// UsageCompare sets metered beside reported usage; nil when the usage was
	// neither metered nor has a report beside it.
	UsageCompare *UsageCompare
	// Network is the egress log; nil when the attempt has none.
	Network *Network
}

// HeldOutFile is one held-out test of the contract.
type HeldOutFile struct {
	Path, Content string
}

// Judge is the judge's report on an attempt: the protected files the worker changed,
// whether they were restored for the checks, the test floor and the held-out tests.
type Judge struct {
	Base      string // the base revision the protected paths were restored from
	Restored  bool
	Prepare   string // how long preparing the judge's view took
	Protected []ProtectedChange
	Floor     *Floor
	HeldOut   *HeldOutResult
	// Dependencies are the dependencies the candidate changed, which the judge
	// installed itself (the contract let them change).
	Dependencies []string
}

// ProtectedChange is one protected file the worker added, changed or deleted.
type ProtectedChange struct {
	Path, Change string
	Parts        []string // for a file protected in part: the parts changed
	Diff         string
}

// Floor is the test floor: the tests that passed at the base revision, run again.
type Floor struct {
	AtBase, Run, Passed, Skipped, Missing, Failed int
	NotRun                                        []string
	OK                                            bool
}

// HeldOutResult is how the held-out tests did. Failed and Detail are set only for a
// reader who may read held-out tests; everyone else reads FailedCount.
type HeldOutResult struct {
	Files       int
	Passed      bool
	FailedCount int
	Failed      []string
	Detail      string // what the worker's diagnosis withheld: the failing tests' messages, the run's output
}

// Check is one check layer's verdict.
type Check struct {
	Stage, Verdict, Diagnosis, Duration string
	// AsAbove says the diagnosis is the attempt's own, shown above the table once.
	AsAbove bool
}

// Criterion is one verification criterion's result.
type Criterion struct {
	Activity, Command, Status, Error, Duration string
	Attempts                                   int
}

// ActionForm is one action the signed-in agent may try, with the inputs it needs.
type ActionForm struct {
	Action      string // the models.Action
	Label       string // button text
	Variant     string // button variant
	Agent       bool   // needs an agent (assign, reassign)
	Reason      bool   // takes a reason (required unless ReasonOpt)
	ReasonOpt   bool
	ReasonLabel string
	Notes       bool // verify
	Summary     bool // submit
	Brief       bool // amend: the task's new brief, its current one filled in
	Values      map[string]string
	Errors      map[string]string
}

// InboxRow is an inbox item of the task.
type InboxRow struct {
	ID         int64
	Kind       string
	Title      string
	Resolved   bool
	Resolution string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func count(n int) string { return strconv.Itoa(n) }

// verdict is the badge state of a pass/fail result.
func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

// restoredText says how the checks saw the protected paths.
func (j Judge) restoredText() string {
	base := j.Base
	if base == "" {
		base = "the base revision"
	} else if len(base) > 12 && base != "snapshot" {
		base = base[:12]
	}
	if j.Restored {
		return "The checks ran with the protected paths restored from " + base + "."
	}
	return "The checks ran on the worker's tests as it left them (the contract lets the tests change); base " + base + "."
}

func actionURL(id int64, action string) string { return "/tasks/" + itoa(id) + "/action/" + action }

func fid(action, field string) string { return "act-" + action + "-" + field }

// BudgetView is what a task spent and may spend, with the form to raise its budget.
type BudgetView struct {
	Spent    string // "$1.23 · 4,500 tokens"
	Cap      string // "$3.00"; "" for no cap
	CanRaise bool   // a lead or exec
	Stopped  bool   // a budget stopped the task (its open blocked item ends at stage budget)
	Values   map[string]string
	Errors   map[string]string
}

// budgetProps is the task's budget card.
func (v View) budgetProps() components.BudgetProps {
	b := v.Budget
	p := components.BudgetProps{TestID: "task-budget", Spent: b.Spent, Cap: b.Cap, CSRF: v.CSRF, Label: "Set budget",
		Values: b.Values, Errors: b.Errors, Blocked: b.Stopped}
	if b.CanRaise {
		p.Action = "/tasks/" + itoa(v.ID) + "/budget"
	}
	return p
}
