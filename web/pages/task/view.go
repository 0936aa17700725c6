package task

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the task page's model.
type View struct {
	Meta              layout.PageMeta
	CSRF              string
	ID                int64
	Title             string
	Brief             string
	Role              string
	State             string
	GoalID            int64
	GoalTitle         string
	Facts             []components.DefItem // assignee, builder, policies, reason, summary…
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
}

// Attempt is one worker invocation with every check layer's verdict.
type Attempt struct {
	Number     int
	Agent      string
	Outcome    string
	Stage      string
	Diagnosis  string
	ExitCode   int
	StartedAt  time.Time
	Duration   string
	Checks     []Check
	Criteria   []Criterion
	OutputTail string
}

// Check is one check layer's verdict.
type Check struct {
	Stage, Verdict, Diagnosis, Duration string
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

func actionURL(id int64, action string) string { return "/tasks/" + itoa(id) + "/action/" + action }

func fid(action, field string) string { return "act-" + action + "-" + field }
