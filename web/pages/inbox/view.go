package inbox

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the inbox's model.
type View struct {
	Meta   layout.PageMeta
	CSRF   string
	Groups []Group // blocked, escalation, advisory; empty kinds left out
	Total  int
}

// Group is the open items of one kind.
type Group struct {
	Kind  string
	Label string
	Items []Item
}

// Item is one open inbox item with its task and the forms that resolve it.
type Item struct {
	// Agents are the choices of the item's assign and reassign forms: the enabled
	// agents holding its task's role.
	Agents     []components.Option
	ID         int64
	Kind       string
	Title      string
	CreatedAt  time.Time
	TaskID     int64
	TaskTitle  string
	TaskState  string
	Override   bool // the task was accepted without passing its checks
	GoalID     int64
	Agent      string               // the blocked task's worker; the paused agent
	AgentHref  string               // agent_paused: the agent's page, where an admin enables it again
	Criteria   []components.DefItem // blocked: the exact completion spec
	Attempts   []Attempt            // blocked: every attempt's stage and failure
	NotReady   bool                 // blocked before any attempt: its contract could not be checked
	BudgetStop bool                 // a budget stopped it: raising the budget resumes it
	Missing    []string             // not ready: what is missing
	// Impossible is the reason the blocked task's worker gave for saying it cannot
	// be done as specified (the block's stage impossible); "" for other blocks.
	Impossible string
	Details    []components.DefItem // escalation and advisory details
	// Output is an advisory item's output itself (never a server path); nil for
	// other kinds and for a task without one.
	Output *components.OutputView
	// Age is how long it has waited, in words (the page shows CreatedAt ticking); Due
	// when its deadline is (or was), "" for a kind without one, and DueAt that moment;
	// Overdue says it passed; Escalated that the lead was told.
	Age       string
	Due       string
	DueAt     time.Time
	Overdue   bool
	Escalated bool
	// Triage is what the triage model said before the blocked task reached a person:
	// its summary and recommended action, or why it could not say; nil when none ran.
	Triage *Triage
	// Advisory is the advisory prompt of a held advisory task and its three forms;
	// nil for other kinds.
	Advisory *AdvisoryPrompt
	Forms    []Form
}

// Triage is a blocked item's triage, in words.
type Triage struct {
	Status    string // escalate, failed, retry (the extra attempt failed too)
	Summary   string
	Recommend string // the recommended action, in words
	Approach  string // a retry's approach, which did not help
	Error     string
}

// Attempt is one failed attempt of a blocked task.
type Attempt struct {
	Number  int
	Stage   string
	Failure string
	// SameAs is the number of an earlier attempt that failed at the same stage in the
	// same words, shown instead of repeating them; 0 when the failure is new.
	SameAs int
}

// Form is one resolving action: check again (a not-ready task), retry, reassign,
// accept or cancel on the item's task, or dismiss on the (advisory or agent_paused)
// item itself.
type Form struct {
	Path        string // where the form posts: the task action's or the item's route
	Action      string // names the form in its test ids and field ids
	Label       string
	Variant     string
	Agent       bool
	Reason      bool
	ReasonLabel string
	Required    bool
	Budget      bool // takes a budget in USD (raise a task's budget)
	Brief       bool // takes the task's new brief (amend), its current one filled in
	Values      map[string]string
	Errors      map[string]string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fid(item int64, action, field string) string {
	return "inbox-" + itoa(item) + "-" + action + "-" + field
}

func attemptHref(task int64, n int) string {
	return "/tasks/" + itoa(task) + "#attempt-" + strconv.Itoa(n)
}

// escalatedNote says an overdue item was escalated to the lead.
func escalatedNote(it Item) string {
	if it.Escalated {
		return " — escalated to the lead"
	}
	return ""
}
