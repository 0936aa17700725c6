package goal

import (
	"net/url"
	"strconv"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the goal page's model.
type View struct {
	Meta         layout.PageMeta
	CSRF         string
	ID           int64
	Title        string
	Description  string
	Project      string
	State        string
	Notes        string
	VerifierName string
	Done, Total  int     // verified or cancelled tasks, all tasks
	Groups       []Group // tasks per state, lifecycle order, non-empty states only
	CanDecide    bool    // a lead, and the goal waits for verification
	CanRun       bool    // a lead, and the goal is not verified
	CanMerge     bool    // a lead, and a merge would land something (models.GoalMergeable)
	MergeWhyNot  string  // for a lead: why a merge would land nothing; "" when it would
	CanRecheck   bool    // a lead or exec, some task is verified, and the runner can recheck
	// Deferred are the goal's deferred checks (e2e, integration), nil when it has
	// none; the lead may verify only once they passed.
	Deferred  *Deferred
	Agents    []components.Option
	Templates []components.Option
	Verify    VerifyForm
	Reject    RejectForm
	Run       RunForm
	Budget    BudgetView
	Progress  *Progress  // burn-down and failing stages (progress.templ); nil: not shown
	Runs      []RunSteps // the goal's workflow runs, step by step (steps.templ)
}

// BudgetView is what a goal's tasks spent and may spend, with the lead's form.
type BudgetView struct {
	Spent  string
	Cap    string // "" for no cap
	CanSet bool   // a lead
	Values map[string]string
	Errors map[string]string
}

// Group is the tasks of one state; Tasks is capped, Count is all of them.
type Group struct {
	State string
	Count int
	Tasks []TaskRow
}

// TaskRow is one task in a group.
type TaskRow struct {
	ID       int64
	Title    string
	Role     string
	Assignee string
	State    string
	Override bool // accepted without passing its checks: marked in its group
}

// VerifyForm is the verify form's input and errors.
type VerifyForm struct {
	Notes  string
	Errors map[string]string
}

// RejectForm is the reject form's input and errors.
type RejectForm struct {
	Reason string
	Fixes  []FixRow
	Errors map[string]string
}

// FixRow is one fix task row of the reject form.
type FixRow struct {
	Title, Brief, Role, Assignee string
	Errors                       map[string]string
}

// RunForm is the start-run form's input and errors.
type RunForm struct {
	Template string
	Params   string
	Errors   map[string]string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fixID(i int, field string) string { return "fix-" + strconv.Itoa(i) + "-" + field }

func tasksHref(goal int64, state string) string {
	q := url.Values{"goal": {itoa(goal)}}
	if state != "" {
		q.Set("state", state)
	}
	return "/tasks?" + q.Encode()
}

// budgetProps is the goal's budget card.
func (v View) budgetProps() components.BudgetProps {
	b := v.Budget
	p := components.BudgetProps{TestID: "goal-budget", Spent: b.Spent, Cap: b.Cap, CSRF: v.CSRF, Label: "Set budget",
		Values: b.Values, Errors: b.Errors}
	if b.CanSet {
		p.Action = "/goals/" + itoa(v.ID) + "/budget"
	}
	return p
}

// Deferred is the deferred checks card: their status, the criteria, and on failure
// what failed with the commands' output.
type Deferred struct {
	Status    string // pending, running, passed, failed
	Criteria  []string
	Diagnosis string
	Output    string
}

// Passed says the deferred checks let the goal be verified.
func (d *Deferred) Passed() bool { return d == nil || d.Status == "passed" }
