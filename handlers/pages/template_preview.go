package pages

import (
	"fmt"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/web/components"
	tplpage "github.com/countersign/countersign/web/pages/template"
)

// The preview shows a step as one example task: paths with {task_id} need a number
// and the brief names the workspace, which exists only once a worker runs.
const (
	previewTaskID  = 42
	previewWorkdir = "/workspace"
)

// previewStep builds the preview of step i of the form: the contract in plain words
// and the brief the runner would give the worker of its first attempt, from the same
// code that builds the task when a run starts (TemplateService.PreviewStepTask) and the brief
// when the task runs (runner.PreviewBrief). A step that cannot become a task yet gets
// the reasons instead of the brief.
func (p *Pages) previewStep(c echo.Context, f tplpage.Form, i int) (*tplpage.Preview, error) {
	t, fe := templateFromForm(f)
	pv := &tplpage.Preview{Step: i,
		Note: fmt.Sprintf("Shown as task %d in the workspace %s; {{params}} are filled in when a run starts.", previewTaskID, previewWorkdir)}
	prefix := tplpage.StepField(i, "")
	problem := func(fields map[string]string, strip string) {
		for k, m := range fields {
			if rest, ok := strings.CutPrefix(k, strip); ok {
				pv.Problems = append(pv.Problems, tplpage.InputLabel(rest)+": "+m)
			}
		}
	}
	problem(fe, prefix)
	if len(fe) == 0 {
		if err := t.Validate(); err != nil {
			if !isInvalid(err) {
				return nil, err
			}
			problem(fieldErrors(err), prefix)
		}
	}
	var task *models.Task
	if len(pv.Problems) == 0 {
		var err error
		task, err = p.svc.Templates.PreviewStepTask(c.Request().Context(), t, i, previewTaskID)
		switch {
		case isInvalid(err):
			problem(fieldErrors(err), "")
		case err != nil:
			return nil, err
		default:
			pv.Brief = runner.PreviewBrief(task, previewWorkdir)
		}
	}
	sort.Strings(pv.Problems)
	pv.Words = contractWords(t.Steps, i, task)
	return pv, nil
}

// contractWords says in a sentence each what step i asks and who signs it off. With
// task (the step as a run would make it) the contract is the resolved one: defaults
// filled in, auto criteria generated. Either way it is read normalised
// (contract.Contract.Normalized), so the defaults are the contract's own.
func contractWords(steps []models.Step, i int, task *models.Task) []string {
	st := steps[i]
	ct := st.Contract()
	out0 := ""
	if task != nil {
		ct = task.Contract
		out0 = ct.OutputPath(task.ID)
	}
	ct = ct.Normalized()
	if task == nil {
		out0 = ct.Completion.Path
	}
	role := strings.TrimSpace(st.Role)
	if role == "" {
		role = models.DefaultTaskRole
	}
	out := []string{fmt.Sprintf("A task for the role %s, %s.", role, releaseWords(steps, i)),
		"Done when " + strings.Join(doneWords(ct.Completion, out0), ", ") + "."}
	out = append(out, checkWords(ct.Verification)...)
	out = append(out, fmt.Sprintf("Approved by %s, verified by %s.", policyWords(st.Approve), policyWords(st.Verify)))
	if r := ct.Review; r != nil {
		then := "the task is blocked"
		if r.ProceedsWithWarnings() {
			then = "the task goes on with the review's findings as warnings"
		}
		out = append(out, fmt.Sprintf("Reviewed by the role %s, at most %s; if the last round fails, %s.", r.Role, components.Plural(r.MaxRounds, "round", "rounds"), then))
	}
	cp := ct.Completion
	out = append(out, fmt.Sprintf("At most %s of %s each.", components.Plural(cp.MaxAttempts, "attempt", "attempts"), cp.Timeout))
	return out
}

// releaseWords says when step i starts.
func releaseWords(steps []models.Step, i int) string {
	st := steps[i]
	release := "released when the run starts"
	if i > 0 {
		prev := steps[i-1].Parallel
		switch {
		case st.Parallel != "" && prev == st.Parallel:
			release = fmt.Sprintf("runs at the same time as step %d (parallel group %q)", i, st.Parallel)
		case prev != "":
			release = fmt.Sprintf("released when every step of the parallel group %q is verified", prev)
		default:
			release = fmt.Sprintf("released when step %d is verified", i)
		}
	}
	if st.Parallel != "" && (i == 0 || steps[i-1].Parallel != st.Parallel) {
		release += fmt.Sprintf("; the steps after it in the parallel group %q run at the same time", st.Parallel)
	}
	return release
}

// doneWords lists what the normalised completion contract cp asks for; out is its
// output path as shown.
func doneWords(cp contract.Completion, out string) []string {
	var done []string
	switch cp.Type {
	case contract.CompletionFile:
		s := fmt.Sprintf("the worker writes %s", out)
		if cp.MinLength > 0 {
			s += fmt.Sprintf(" (at least %d bytes)", cp.MinLength)
		}
		done = append(done, s)
	case contract.CompletionSignal:
		done = append(done, fmt.Sprintf("the worker writes %s with the signal %q", out, cp.Signal))
	default:
		done = append(done, "the worker exits cleanly")
	}
	if cp.DoneToken != "" {
		done = append(done, fmt.Sprintf("prints %s", cp.DoneToken))
	}
	if n := len(cp.Verify); n > 0 {
		done = append(done, components.Plural(n, "command exits", "commands exit")+" 0")
	}
	if cl := cp.Checklist; cl != nil {
		done = append(done, fmt.Sprintf("%s has %s checked", cl.Path, components.Plural(cl.Count, "box", "boxes")))
	}
	if cp.Clean {
		done = append(done, "leaves no uncommitted changes")
	}
	if cp.Evaluate != "" {
		done = append(done, "an evaluator accepts the output")
	}
	return done
}

// checkWords says how the normalised verification contract vf checks the work.
func checkWords(vf contract.Verification) []string {
	var out []string
	switch vf.Type {
	case contract.VerifyAdvisory:
		out = append(out, "Advisory: no automated checks; a person reads the output.")
	case contract.VerifySkip:
		out = append(out, fmt.Sprintf("Minimal checks only (%s).", components.Plural(len(vf.Criteria), "criterion", "criteria")))
	case contract.VerifyAuto:
		out = append(out, "Criteria are generated from the task with the project rules when the run starts.")
	default:
		acts := make([]string, 0, len(vf.Criteria))
		for _, cr := range vf.Criteria {
			acts = append(acts, cr.Activity)
		}
		s := fmt.Sprintf("Verified by %s", components.Plural(len(vf.Criteria), "criterion", "criteria"))
		if len(acts) > 0 {
			s += " (" + strings.Join(acts, ", ") + ")"
		}
		out = append(out, s+".")
	}
	if n := len(vf.HeldOut) + vf.HeldOutCount; n > 0 {
		out = append(out, fmt.Sprintf("%s the worker never sees run too.", components.Plural(n, "held-out test", "held-out tests")))
	}
	return out
}

// policyWords names an approve or verify policy: the runner when empty.
func policyWords(p models.Policy) string {
	switch p = strings.TrimSpace(p); p {
	case "", models.PolicyRunner:
		return "the runner"
	case models.PolicyAny:
		return "anyone"
	}
	return "the role " + p
}
