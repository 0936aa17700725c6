package pages_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// The held-out test of these tests: its path and a marker in its content must never
// reach a reader who may not set held-out tests.
const (
	pageHeldOutPath   = "calc_heldout_test.go"
	pageHeldOutMarker = "HELDOUT_SECRET_Add_10_4"
)

func pageHeldOutContent() string {
	return "package calc\n\nfunc TestBig(t *testing.T) {\n\tif Add(10, 4) != 14 { t.Fatal(\"" + pageHeldOutMarker + "\") }\n}\n"
}

// judgedTask creates a worker task (created by the lead, with one held-out test) and
// records attempts with the judge's reports given, then walks the task as the runner
// would: verified when pass, else left in progress.
func (e *env) judgedTask(title string, pass bool, attempts ...models.Attempt) *models.Task {
	e.t.Helper()
	ctx := e.ctx()
	tk, err := e.svc.Tasks.CreateTask(ctx, e.agents["lead"], models.TaskSpec{Title: title, Brief: "Brief of " + title, Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "unit-test", Description: "the tests pass"}},
				Protect:  []string{"spec/**"},
				HeldOut:  []contract.HeldOutTest{{Path: pageHeldOutPath, Content: pageHeldOutContent()}}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	start := time.Now().UTC().Add(-time.Minute)
	for i, a := range attempts {
		a.TaskID, a.Number, a.AgentID, a.RunnerID = tk.ID, i+1, e.agents["bot"].ID, "r1"
		a.StartedAt = start.Add(time.Duration(i) * time.Second)
		done := a.StartedAt.Add(500 * time.Millisecond)
		a.FinishedAt = &done
		if err := e.db.CreateAttempt(ctx, &a); err != nil {
			e.t.Fatal(err)
		}
	}
	if pass {
		runner, _ := e.svc.Agents.RunnerAgent(ctx)
		err := e.svc.Store().InTx(ctx, func(tx models.Tx) error {
			lt, err := tx.LockTask(ctx, tk.ID)
			if err != nil {
				return err
			}
			return e.svc.Attempts.RunnerPass(ctx, tx, runner, lt, "done", "", false)
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return tk
}

// A diff with markup in it: the page must show it escaped.
const judgeDiff = "@@ -3,3 +3,3 @@\n func TestAdd(t *testing.T) {\n-\tif Add(2, 2) != 4 {\n+\tif Add(2, 2) != 5 { // <script>alert(1)</script>\n"

func tamperAttempt() models.Attempt {
	return models.Attempt{Outcome: models.OutcomeFailed, Stage: models.StageTamper,
		Diagnosis: "the tests you changed (calc_test.go) fail as they were at the base revision",
		Checks: []models.CheckResult{{Stage: models.StageProcess, Verdict: models.VerdictPass},
			{Stage: models.StageTamper, Verdict: models.VerdictFail, Diagnosis: "restored tests failed"}},
		Judge: &models.JudgeReport{Base: "0123456789abcdef0123", Restored: true, PrepareMS: 42,
			Protected: []models.ProtectedChange{
				{Path: "calc_test.go", Change: models.ChangeChanged, Diff: judgeDiff},
				{Path: "package.json", Change: models.ChangeChanged, Parts: []string{"scripts.test"}},
			},
			Floor:        &models.TestFloor{AtBase: 3, Run: 2, Passed: 2, Missing: 1, NotRun: []string{"TestSub"}},
			Dependencies: []string{"package.json: is-number added ^7.0.0"},
			HeldOut: &models.HeldOutReport{Files: 1, FailedCount: 1, Failed: []string{"TestBig: Add(10, 4) = 6, want 14"},
				Detail: "criterion unit-test: command \"go test\" exited with status 1;\n--- FAIL: TestBig\n    calc_heldout_test.go:7: Add(10, 4) = 6, want 14"}}}
}

// TestTaskPageJudge: the task page shows each attempt's judge's report (the tests the
// worker changed with their diffs escaped, the test floor, the held-out tests), warns
// beside the state when the newest attempt changed tests, even on a verified task, and
// shows tamper like any failing stage. The contract's held-out test is read back by the
// lead and by no one else, who reads its number.
func TestTaskPageJudge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	passed := tamperAttempt()
	passed.Outcome, passed.Stage, passed.Diagnosis, passed.Checks = models.OutcomePassed, "", "", nil
	passed.Judge.HeldOut = &models.HeldOutReport{Files: 1, Passed: true}
	passed.Judge.Floor = &models.TestFloor{AtBase: 3, Run: 3, Passed: 3, OK: true}
	tk := e.judgedTask("Make Add add", true, tamperAttempt(), passed)
	if s := e.state(tk.ID); s != models.TaskVerified {
		t.Fatalf("fixture: %s", s)
	}

	dev := e.browser().login("dev")
	r := dev.get("/tasks/" + itoa64(tk.ID))
	if r.Status != http.StatusOK {
		t.Fatalf("task page: %d", r.Status)
	}
	for _, want := range []string{
		`data-testid="tests-changed-warning"`, "tests changed by the worker",
		`data-testid="judge-tests-changed"`, "Tests changed by the worker",
		`<code>calc_test.go</code>`, `data-testid="judge-change-kind">changed</span>`, `<code>scripts.test</code>`,
		`data-testid="judge-dependency">package.json: is-number added ^7.0.0</code>`,
		`data-testid="judge-diff"`, `// &lt;script&gt;alert(1)&lt;/script&gt;`,
		`data-testid="judge-floor"`, "<dt>Passing at the base</dt><dd>3</dd>", "<dt>Missing</dt><dd>1</dd>", "<code>TestSub</code>",
		`data-testid="judge-held-out"`, "<dt>Files</dt><dd>1</dd>", "<dt>Failed</dt><dd>1</dd>",
		"restored from 0123456789ab", "Prepared in 42 ms",
		"Failed at tamper:", `data-testid="check-tamper"`, `data-state="verified"`,
		"<dt>Held-out tests</dt><dd>1, hidden: only admins, editors and leads read them</dd>", "<code>spec/**</code>",
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the developer's task page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "<script>alert(1)") {
		t.Error("the diff is rendered unescaped")
	}
	if n := strings.Count(r.Body, `data-testid="judge-tests-changed"`); n != 2 {
		t.Errorf("%d attempts show the tests changed, want both (the passing one too)", n)
	}
	// Nor which held-out test failed, with what input: the worker could read it there.
	for _, leak := range []string{pageHeldOutPath, pageHeldOutMarker, `data-testid="task-held-out"`, "TestBig", "Add(10, 4)", `data-testid="judge-held-out-detail"`} {
		if strings.Contains(r.Body, leak) {
			t.Errorf("the developer's task page shows the held-out test (%q)", leak)
		}
	}

	// The lead reads the held-out test, path and content, on the same page, and which
	// of them failed, how, with the output the worker was not shown.
	lead := e.browser().login("lead")
	r = lead.get("/tasks/" + itoa64(tk.ID))
	for _, want := range []string{`data-testid="task-held-out"`, "<dt>Held-out tests</dt><dd><ul><li><code>" + pageHeldOutPath + "</code>", pageHeldOutMarker,
		"<dt>Failed tests</dt>", "TestBig: Add(10, 4) = 6, want 14", `data-testid="judge-held-out-detail"`, "calc_heldout_test.go:7: Add(10, 4) = 6, want 14"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the lead's task page lacks %q", want)
		}
	}

	// The warning follows the newest attempt: one that changed no test clears it, while
	// the earlier attempt's report still lists its changes.
	clean := passed
	clean.Judge = &models.JudgeReport{Base: "snapshot", Restored: true}
	t2 := e.judgedTask("Make Sub subtract", false, tamperAttempt(), clean)
	r = dev.get("/tasks/" + itoa64(t2.ID))
	if strings.Contains(r.Body, `data-testid="tests-changed-warning"`) {
		t.Error("warned though the newest attempt changed no test")
	}
	if strings.Count(r.Body, `data-testid="judge-tests-changed"`) != 1 || strings.Count(r.Body, `data-testid="judge"`) != 2 {
		t.Error("the attempts' judge's reports are not both shown")
	}
	// An attempt without a report shows none.
	t3 := e.judgedTask("Make Mul multiply", false, models.Attempt{Outcome: models.OutcomeFailed, Stage: models.StageProcess, Diagnosis: "exit 1"})
	if r = dev.get("/tasks/" + itoa64(t3.ID)); strings.Contains(r.Body, `data-testid="judge"`) || strings.Contains(r.Body, "tests-changed-warning") {
		t.Error("a report shown for an attempt without one")
	}
}

// TestTemplateEditorHeldOut: an editor sets a step's protected paths, tests_may_change
// and held-out tests in the form; they are saved (CRLF from the browser stored as LF),
// shown back, kept when the form is saved again, removed with their button, and bad
// values come back beside their field with 422. A developer reads the template, its
// YAML and its history without the held-out test, told how many there are.
func TestTemplateEditorHeldOut(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	c := e.login("eve")
	page := c.get("/templates/new")
	page.want(t, http.StatusOK, `name="steps[0].verification.held_out[0].path"`, `name="steps[0].verification.held_out[0].content"`,
		`name="steps[0].verification.protect"`, `name="steps[0].verification.tests_may_change"`, `data-testid="held-out-hint-0"`)
	content := strings.ReplaceAll(pageHeldOutContent(), "\n", "\r\n") + "// <b>not markup</b>\r\n"
	res := editorOp(t, c, page, "/templates/new", map[string]string{
		"name": "calc", "steps[0].role": "developer", "steps[0].brief": "Make Add add", "steps[0].completion.type": "none",
		"steps[0].verification.type":                 "verifiable",
		"steps[0].verification.criteria[0].activity": "unit-test", "steps[0].verification.criteria[0].description": "tests pass",
		"steps[0].verification.protect":             "spec/**\r\n\r\npackage.json#scripts",
		"steps[0].verification.tests_may_change":    "on",
		"steps[0].verification.held_out[0].path":    pageHeldOutPath,
		"steps[0].verification.held_out[0].content": content,
	}, "save")
	res.want(t, http.StatusSeeOther)
	tpl, err := e.db.GetTemplate(ctx, "calc", 0)
	if err != nil {
		t.Fatal(err)
	}
	v := tpl.Steps[0].Verification
	wantContent := strings.ReplaceAll(content, "\r\n", "\n")
	if strings.Join(v.Protect, "|") != "spec/**|package.json#scripts" || !v.TestsMayChange || len(v.HeldOut) != 1 ||
		v.HeldOut[0].Path != pageHeldOutPath || v.HeldOut[0].Content != wantContent {
		t.Fatalf("saved verification %+v", v)
	}

	// Shown back (escaped), and saving the form as it is keeps every setting.
	page = c.get("/templates/calc")
	page.want(t, http.StatusOK, `value="`+pageHeldOutPath+`"`, pageHeldOutMarker, "// &lt;b&gt;not markup&lt;/b&gt;", "package.json#scripts")
	editorOp(t, c, page, "/templates/calc", nil, "save").want(t, http.StatusSeeOther)
	v2, _ := e.db.GetTemplate(ctx, "calc", 0)
	if v2.Version != 2 || len(v2.Steps[0].Verification.HeldOut) != 1 || v2.Steps[0].Verification.HeldOut[0].Content != wantContent ||
		!v2.Steps[0].Verification.TestsMayChange || len(v2.Steps[0].Verification.Protect) != 2 {
		t.Fatalf("saving the form again changed the judge's settings: %+v", v2.Steps[0].Verification)
	}

	// A second held-out test in the empty row; then remove the first with its button.
	page = c.get("/templates/calc")
	two := editorOp(t, c, page, "/templates/calc", map[string]string{
		"steps[0].verification.held_out[1].path": "more_heldout_test.go", "steps[0].verification.held_out[1].content": "package calc\n"}, "remove-held-out:0:0")
	two.want(t, http.StatusOK, `value="more_heldout_test.go"`)
	if form := two.Body[:strings.Index(two.Body, "</form>")]; strings.Contains(form, pageHeldOutMarker) || strings.Contains(form, `value="`+pageHeldOutPath+`"`) {
		t.Fatal("the removed held-out test is still in the form")
	}
	editorOp(t, c, page, "/templates/calc", nil, "remove-held-out:0:5").want(t, http.StatusBadRequest)

	// Bad values: 422, each message beside its field, nothing saved.
	bad := editorOp(t, c, page, "/templates/calc", map[string]string{
		"steps[0].verification.held_out[0].path":    "../escape_test.go",
		"steps[0].verification.held_out[1].path":    "empty_test.go",
		"steps[0].verification.held_out[1].content": "  ",
		"steps[0].verification.protect":             "spec/**\n/etc/**",
	}, "save")
	bad.want(t, http.StatusUnprocessableEntity, `value="../escape_test.go"`)
	assertFieldError(t, bad.Body, "steps[0].verification.held_out[0].path", "workspace")
	assertFieldError(t, bad.Body, "steps[0].verification.held_out[1].content", "is required")
	assertFieldError(t, bad.Body, "steps[0].verification.protect", "line 2: must be a pattern relative to the workspace")
	if v, _ := e.db.GetTemplate(ctx, "calc", 0); v.Version != 2 {
		t.Fatalf("a refused save stored version %d", v.Version)
	}

	// The editor's history shows the diffs, held-out test included.
	if !strings.Contains(page.Body, `data-testid="history-diff"`) || strings.Contains(page.Body, `data-testid="history-diff-hidden"`) {
		t.Fatal("the editor does not read the template's diffs")
	}

	// A developer: the count, never the test, in the form, the YAML and the history.
	d := e.login("dev")
	dp := d.get("/templates/calc")
	dp.want(t, http.StatusOK, `data-testid="held-out-hidden-0"`, "1 held-out test(s), hidden", `data-testid="history-diff-hidden"`, "package.json#scripts")
	old := d.get("/templates/calc?version=1")
	old.want(t, http.StatusOK, "1 held-out test(s), hidden")
	y := d.get("/templates/calc/yaml")
	y.want(t, http.StatusOK, "# steps[0] has 1 held-out test(s), hidden", "name: calc")
	for name, body := range map[string]string{"form": dp.Body, "old version": old.Body, "yaml": y.Body} {
		if strings.Contains(body, pageHeldOutPath) || strings.Contains(body, pageHeldOutMarker) || strings.Contains(body, `data-testid="history-diff"`) {
			t.Errorf("the developer reads the held-out test in the %s", name)
		}
	}
	// The editor's YAML carries it, and parses back to the same test.
	ey := c.get("/templates/calc/yaml")
	back, err := models.ParseTemplate([]byte(ey.Body))
	if err != nil || len(back.Steps[0].Verification.HeldOut) != 1 || back.Steps[0].Verification.HeldOut[0].Content != wantContent {
		t.Fatalf("the editor's YAML: %v %s", err, ey.Body)
	}
}
