package pages

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/pages/inbox"
)

// advisoryReasonText says each reason an advisory task waits in words.
var advisoryReasonText = map[string]string{
	models.AdvisoryReasonSetting:   "the project rules ask for every advisory task (prompt_for_advisory)",
	models.AdvisoryReasonAmbiguous: "its words could mean advisory or verifiable work",
	models.AdvisoryReasonMultiStep: "it is a step of a multi-step run",
}

// advisoryLabels are the three forms' buttons.
var advisoryLabels = map[string]struct{ label, variant string }{
	models.AdvisoryProceed:        {"Proceed as advisory", "primary"},
	models.AdvisoryMakeVerifiable: {"Make verifiable and delegate", "primary"},
	models.AdvisoryCancel:         {"Cancel task", "danger"},
}

// advisoryPath is where the form of one advisory resolution of task id posts.
func advisoryPath(id int64, action string) string {
	return "/tasks/" + itoa(id) + "/advisory/" + action
}

// advisoryPromptView builds the advisory prompt of item it: its reasons, and for a
// lead or exec the three forms, make verifiable prefilled with the suggested criteria.
func advisoryPromptView(it models.InboxItem, me *models.Agent) *inbox.AdvisoryPrompt {
	var p models.AdvisoryPromptPayload
	_ = json.Unmarshal(it.Payload, &p)
	out := &inbox.AdvisoryPrompt{}
	for _, r := range p.Reasons {
		if s, ok := advisoryReasonText[r]; ok {
			r = s
		}
		out.Reasons = append(out.Reasons, r)
	}
	if !models.CanResolveInbox(me) {
		return out
	}
	for _, a := range models.AdvisoryActions {
		f := inbox.Form{Path: advisoryPath(it.TaskID, a), Action: "advisory-" + a, Label: advisoryLabels[a].label,
			Variant: advisoryLabels[a].variant, Reason: true, ReasonLabel: "Note (optional)"}
		if a == models.AdvisoryMakeVerifiable {
			f.Values = map[string]string{"criteria": criteriaLines(p.Suggested)}
		}
		out.Forms = append(out.Forms, f)
	}
	return out
}

// criteriaLines writes criteria as the form reads them: "activity: description".
func criteriaLines(cs []contract.Criterion) string {
	lines := make([]string, 0, len(cs))
	for _, c := range cs {
		lines = append(lines, c.Activity+": "+c.Description)
	}
	return strings.Join(lines, "\n")
}

// parseCriteriaLines reads the make-verifiable form's criteria, one per line as
// "activity: description"; blank lines are skipped. A line without the colon is a
// field error naming it. lines[i] is the form's line (from 1) of criterion i, so that
// the service's errors, which count criteria, name the line the person wrote.
func parseCriteriaLines(text string) (crit []contract.Criterion, lines []int, bad string) {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		act, desc, ok := strings.Cut(line, ":")
		if !ok {
			return nil, nil, "line " + strconv.Itoa(i+1) + ": write it as activity: description"
		}
		crit = append(crit, contract.Criterion{Activity: strings.TrimSpace(act), Description: strings.TrimSpace(desc)})
		lines = append(lines, i+1)
	}
	return crit, lines, ""
}

// resolveAdvisory answers POST /tasks/:id/advisory/:action (proceed, make_verifiable,
// cancel) with the note (reason) and, for make_verifiable, the criteria: the service
// checks every rule (lead or exec, a prompt waiting, criteria valid as at creation).
// Invalid input re-renders the inbox with the errors on that form (422), nothing
// changed.
func (p *Pages) resolveAdvisory(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	action := c.Param("action")
	values := map[string]string{"reason": c.FormValue("reason"), "criteria": c.FormValue("criteria")}
	d := models.AdvisoryDecision{Action: action, Reason: values["reason"]}
	var lines []int // criterion index → the form's line
	if action == models.AdvisoryMakeVerifiable {
		crit, l, bad := parseCriteriaLines(values["criteria"])
		if bad != "" {
			return p.advisoryForm(c, id, action, values, map[string]string{"criteria": bad})
		}
		d.Criteria, lines = crit, l
	}
	t, err := p.svc.Tasks.ResolveAdvisoryPrompt(c.Request().Context(), SignedIn(c), id, d)
	if isInvalid(err) {
		errs := map[string]string{}
		var crit []string
		for k, v := range fieldErrors(err) {
			switch {
			case strings.Contains(k, "criteria"):
				crit = append(crit, criterionField(k, lines)+" "+v)
			case k == "reason":
				errs[k] = v
			default:
				crit = append(crit, k+": "+v)
			}
		}
		if len(crit) > 0 {
			sort.Strings(crit)
			errs["criteria"] = strings.Join(crit, "; ")
		}
		return p.advisoryForm(c, id, action, values, errs)
	}
	if err != nil {
		return err
	}
	msg := map[string]string{models.AdvisoryProceed: "proceeds as advisory", models.AdvisoryMakeVerifiable: "is verifiable now and delegated",
		models.AdvisoryCancel: "is cancelled"}[action]
	return done(c, backTo(c, "/inbox"), "Task #"+itoa(t.ID)+" "+msg+".")
}

// criterionField names a criterion's field error in the form's terms: the
// service's verification.criteria[1].description is "line 3 description" when the
// second criterion was written on line 3 (lines maps criterion index to line; blank
// lines are not criteria). An index lines does not know keeps the service's name.
func criterionField(k string, lines []int) string {
	i := strings.Index(k, "criteria[")
	if i < 0 {
		return k + ":"
	}
	n, field, _ := strings.Cut(k[i+len("criteria["):], "]")
	idx, err := strconv.Atoi(n)
	if err != nil || idx < 0 || idx >= len(lines) {
		return k + ":"
	}
	return "line " + strconv.Itoa(lines[idx]) + " " + strings.TrimPrefix(field, ".")
}

// advisoryForm re-renders the inbox with the input and errors of task taskID's
// advisory form action (422).
func (p *Pages) advisoryForm(c echo.Context, taskID int64, action string, values, errs map[string]string) error {
	return p.inboxFormAt(c, advisoryPath(taskID, action), values, errs)
}
