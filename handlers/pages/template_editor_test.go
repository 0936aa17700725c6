package pages_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner"
)

// TestTemplateEditorParallelAndOnExhausted saves a step's parallel group and a review's
// on_exhausted from the form and reads them back into it.
func TestTemplateEditorParallelAndOnExhausted(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	c := e.login("eve")
	page := c.get("/templates/new")
	page = editorOp(t, c, page, "/templates/new", map[string]string{"name": "fan-out", "steps[0].role": "developer", "steps[0].brief": "Build it"}, "add")
	page = editorOp(t, c, page, "/templates/new", nil, "add")
	res := editorOp(t, c, page, "/templates/new", map[string]string{
		"steps[1].role": "reviewer", "steps[1].brief": "Check the docs", "steps[1].parallel": " checks ",
		"steps[1].review.role": "lead", "steps[1].review.on_exhausted": "proceed_with_warnings",
		"steps[2].role": "tester", "steps[2].brief": "Check the tests", "steps[2].parallel": "checks",
	}, "save")
	res.want(t, http.StatusSeeOther)
	tpl, err := e.db.GetTemplate(context.Background(), "fan-out", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := tpl.Steps
	if s[0].Parallel != "" || s[1].Parallel != "checks" || s[2].Parallel != "checks" {
		t.Fatalf("parallel groups %q %q %q", s[0].Parallel, s[1].Parallel, s[2].Parallel)
	}
	if s[1].Review == nil || s[1].Review.OnExhausted != "proceed_with_warnings" || s[2].Review != nil {
		t.Fatalf("reviews %+v %+v", s[1].Review, s[2].Review)
	}
	back := c.get("/templates/fan-out")
	back.want(t, http.StatusOK, `name="steps[1].parallel" type="text" value="checks"`, `name="steps[2].parallel" type="text" value="checks"`,
		"parallel: checks")
	if v := formValues(t, back.Body, "/templates/fan-out"); v.Get("steps[1].review.on_exhausted") != "proceed_with_warnings" {
		t.Fatalf("on_exhausted shown as %q", v.Get("steps[1].review.on_exhausted"))
	}
	// A bad group, a group split in two and an unknown on_exhausted: refused, each
	// message beside its field, the steps with errors open.
	bad := editorOp(t, c, back, "/templates/fan-out", map[string]string{"steps[0].parallel": "Not A Group"}, "save")
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="step-details-0" open`)
	assertFieldError(t, bad.Body, "steps[0].parallel", "must be 1-32 lower-case letters")
	split := editorOp(t, c, back, "/templates/fan-out", map[string]string{"steps[0].parallel": "checks", "steps[1].parallel": ""}, "save")
	split.want(t, http.StatusUnprocessableEntity)
	assertFieldError(t, split.Body, "steps[2].parallel", "must be consecutive steps")
	crafted := editorOp(t, c, back, "/templates/fan-out", map[string]string{"steps[1].review.on_exhausted": "maybe"}, "save")
	crafted.want(t, http.StatusUnprocessableEntity, `data-testid="step-details-1" open`)
	assertFieldError(t, crafted.Body, "steps[1].review.on_exhausted", "must be block or proceed_with_warnings")

	// Saved again unchanged, the form gives the same steps.
	editorOp(t, c, back, "/templates/fan-out", nil, "save").want(t, http.StatusSeeOther)
	v2, _ := e.db.GetTemplate(context.Background(), "fan-out", 0)
	if v2.Version != 2 || v2.Steps[1].Parallel != "checks" || v2.Steps[1].Review == nil || v2.Steps[1].Review.OnExhausted != "proceed_with_warnings" {
		t.Fatalf("version 2 %+v", v2.Steps[1])
	}
}

// TestTemplateEditorCollapsed: a saved template shows every step as a closed summary
// line (name, role, verification type, criteria count); the step a button acted on,
// and every step with a field error, comes back open.
func TestTemplateEditorCollapsed(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "three", 3)
	c := e.login("eve")
	page := c.get("/templates/three")
	page.want(t, http.StatusOK, `data-testid="step-summary-2"`, "Step 3", "Part 3", "verifiable", "1 criterion")
	if strings.Contains(page.Body, `data-testid="step-details-0" open`) || strings.Contains(page.Body, `data-unsaved`) {
		t.Fatal("a step is open, or the form is marked unsaved, on a fresh page")
	}
	// The first step cannot move up nor the last down: their buttons are disabled.
	if !strings.Contains(page.Body, `value="up:0" disabled`) || !strings.Contains(page.Body, `value="down:2" disabled`) {
		t.Fatal("the first step's up or the last step's down is not disabled")
	}
	moved := editorOp(t, c, page, "/templates/three", nil, "down:0")
	moved.want(t, http.StatusOK, `data-testid="step-details-1" open`, `data-unsaved="true"`)
	if got := stepRoles(t, moved.Body); strings.Join(got, ",") != "role-2,role-1,role-3" {
		t.Fatalf("after down:0: %q", got)
	}
	bad := editorOp(t, c, page, "/templates/three", map[string]string{"steps[2].completion.path": "/etc/passwd"}, "save")
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="step-details-2" open`, `data-testid="step-errors-2"`)
	assertFieldError(t, bad.Body, "steps[2].completion.path", "")
	if strings.Contains(bad.Body, `data-testid="step-details-0" open`) {
		t.Fatal("a step without errors opened")
	}
}

// TestTemplateEditorPreview: the Preview button (no JavaScript) re-shows the form with
// the step's contract in plain words and the brief the runner renders for it; with
// the X-Template-Preview header only that fragment is answered.
func TestTemplateEditorPreview(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "three", 3)
	c := e.login("eve")
	page := c.get("/templates/three")
	page.want(t, http.StatusOK, `data-testid="preview-empty"`, `src="/static/editor.js?v=`)

	res := editorOp(t, c, page, "/templates/three", map[string]string{"steps[1].brief": "Write the {{thing}} docs."}, "preview:1")
	res.want(t, http.StatusOK, `data-testid="preview-title"`, "Preview: step 2", `data-testid="step-details-1" open`,
		"# Task 42: Part 2", "Write the {{thing}} docs.", "## What done looks like", "Where to write", "/workspace/42/out-2.md",
		"A task for the role role-2, released when step 1 is verified.", "Verified by 1 criterion (unit-test).",
		"Approved by the runner, verified by the role lead.", contract.NoProtocolMessages)
	if v, _ := e.db.GetTemplate(context.Background(), "three", 0); v.Version != 1 {
		t.Fatalf("a preview saved version %d", v.Version)
	}

	// The fragment: the card's inside, not a page.
	v := formValues(t, page.Body, "/templates/three")
	v.Set("op", "preview:0")
	v.Set("csrf", c.csrf)
	frag := c.do("POST", "/templates/three", v, previewHdr)
	frag.want(t, http.StatusOK, "Preview: step 1", "# Task 42: Part 1", "released when the run starts")
	if strings.Contains(frag.Body, "<html") || strings.Contains(frag.Body, `data-testid="template-form"`) {
		t.Fatal("the preview fragment is a whole page")
	}

	// A step that cannot become a task says why instead of a brief.
	v.Set("steps[0].completion.timeout", "soon")
	c.do("POST", "/templates/three", v, previewHdr).
		want(t, http.StatusOK, `data-testid="preview-problems"`, "Timeout: not a duration like 30m")
	// A step that does not exist is a bad request.
	v.Set("op", "preview:7")
	c.do("POST", "/templates/three", v, previewHdr).want(t, http.StatusBadRequest)
}

// saveTemplate stores a template of n steps named Part 1…n for roles role-1…n, each
// writing out-i.md with one unit-test criterion, verified by a lead.
func saveTemplate(t *testing.T, e *admEnv, name string, n int) *models.Template {
	t.Helper()
	tpl := &models.Template{Name: name, Description: "A template of " + name + " steps"}
	for i := 1; i <= n; i++ {
		id := string(rune('0' + i%10))
		if i >= 10 {
			id = "1" + id
		}
		tpl.Steps = append(tpl.Steps, models.Step{Name: "Part " + id, Role: "role-" + id, Brief: "Do part " + id + ".", Verify: "lead",
			Completion: contract.Completion{Path: "{task_id}/out-" + id + ".md"},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "unit-test", Description: "Part " + id + " works"}}}})
	}
	if err := e.svc.Templates.SaveTemplate(context.Background(), models.System, tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// previewHdr asks the editor for the preview fragment, as editor.js does.
var previewHdr = map[string]string{"X-Template-Preview": "1"}

// TestPreviewIsTheRunsBrief: for every step, the preview's task (Service.PreviewStepTask)
// and its brief (runner.PreviewBrief) are those of the task a run of the same template
// makes, auto criteria and defaults included.
func TestPreviewIsTheRunsBrief(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	tpl := saveTemplate(t, e, "runs", 2)
	tpl.Name = "runs-auto"
	tpl.Steps[1].Verification = contract.Verification{Type: contract.VerifyAuto}
	tpl.Steps[1].Review = &contract.Review{Role: "lead", OnExhausted: "proceed_with_warnings"}
	tpl.Steps[1].Completion.Verify = []string{"go test ./..."}
	if err := e.svc.Templates.SaveTemplate(ctx, models.System, tpl); err != nil {
		t.Fatal(err)
	}
	lead := e.human("lou", models.RoleLead)
	g := &models.Goal{Title: "Run the template"}
	if err := e.svc.Goals.CreateGoal(ctx, lead, g); err != nil {
		t.Fatal(err)
	}
	_, tasks, err := e.svc.Templates.StartRun(ctx, lead, g.ID, "runs-auto", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		run, err := e.db.GetTask(ctx, tasks[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		pv, err := e.svc.Templates.PreviewStepTask(ctx, tpl, i, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, want := runner.PreviewBrief(pv, "/ws"), runner.PreviewBrief(run, "/ws")
		if got != want {
			t.Fatalf("step %d: the preview's brief differs from the run's task's:\n--- preview\n%s\n--- run\n%s", i+1, got, want)
		}
		if i == 1 && !strings.Contains(got, "go test ./...") {
			t.Fatalf("step 2's brief lacks its verify command:\n%s", got)
		}
	}
}
