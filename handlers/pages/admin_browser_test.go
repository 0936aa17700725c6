package pages_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// read stores the value of a query action in *dst, so it can run among Do's steps.
func read[T any](a chromedp.Action[T], dst *T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v, err := a(ctx, tg)
		*dst = v
		return err
	})
}

func byTestID(id string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + id + `"]`) }

// TestBrowserTemplateEditor signs in, edits a step's output path to one outside the
// workspace, sees the error beside that field, fixes it and sees the new version; it
// screenshots every admin page.
func TestBrowserTemplateEditor(t *testing.T) {
	t.Parallel()
	ctx := chrome(t)
	// Leaving the editor after "Add step" (unsaved) asks first: accept.
	acceptDialogs(ctx)
	e := newAdmEnv(t, pagesLocal)
	bg := context.Background()
	w := seedFeatureFlow(t, e)
	_, blocked := ledgerEntries(t, e)
	dir := artifacts(t)
	shot := adminShot(dir)
	base := e.srv.URL
	path0 := byTestID("steps[0].completion.path")
	browseRefusedSave(t, ctx, e, base, path0, shot)
	var subtitle, flash string
	err := chromedp.Do(ctx,
		chromedp.SetValue(path0, "{task_id}/toggle.md"),
		chromedp.Click(byTestID("op-save")),
		chromedp.WaitVisible(byTestID("flash")),
		read(chromedp.Text(byTestID("flash")), &flash),
		read(chromedp.Text(chromedp.CSS(`.page-header .subtitle`)), &subtitle),
		chromedp.WaitVisible(byTestID("version-2")),
		shot("template-saved"),

		// Add a step without JavaScript's help: the form comes back with step 3.
		chromedp.Click(byTestID("op-add")),
		chromedp.WaitVisible(byTestID("step-2")),

		chromedp.Navigate(base+"/templates/feature-flow?version=1"),
		chromedp.WaitVisible(byTestID("template-versions")),
		shot("template-v1-readonly"),
		chromedp.Navigate(base+"/templates/new"),
		chromedp.WaitVisible(byTestID("template-form")),
		shot("template-new"),
		chromedp.Navigate(base+"/templates/import"),
		chromedp.WaitVisible(byTestID("import-form")),
		chromedp.SetValue(chromedp.CSS(`textarea[name="yaml"]`), "name: broken\nsteps:\n  - role: developer\n    brief: [unclosed\n"),
		chromedp.Click(byTestID("import-submit")),
		chromedp.WaitVisible(byTestID("yaml-error")),
		shot("template-import-error"),

		chromedp.Navigate(base+"/rules"),
		chromedp.WaitVisible(byTestID("rules-form")),
		chromedp.SendKeys(byTestID("try-title"), "Add a dark mode toggle to web/Toggle.tsx"),
		chromedp.Click(byTestID("try-submit")),
		chromedp.WaitVisible(byTestID("try-result")),
		shot("rules"),

		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(byTestID("agents-table")),
		shot("agents"),
		chromedp.Navigate(base+"/agents/"+strconv.FormatInt(w.ID, 10)),
		chromedp.WaitVisible(byTestID("agent-token-form")),
		chromedp.Click(byTestID("agent-token-submit")),
		chromedp.WaitVisible(byTestID("new-token")),
		shot("agent-token"),

		chromedp.Navigate(base+"/ledger"),
		chromedp.WaitVisible(byTestID("ledger-table")),
		chromedp.Click(byTestID("ledger-verify")),
		chromedp.WaitVisible(byTestID("verify-ok")),
		shot("ledger"),
		chromedp.Navigate(base+"/ledger/"+strconv.FormatInt(blocked.ID, 10)),
		chromedp.WaitVisible(byTestID("ledger-message-bytes")),
		shot("ledger-entry"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flash, "Saved feature-flow version 2") || !strings.Contains(subtitle, "Editing version 2") {
		t.Fatalf("after the fix: flash %q, subtitle %q", flash, subtitle)
	}
	v2, err := e.db.GetTemplate(bg, "feature-flow", 0)
	if err != nil || v2.Version != 2 || v2.Steps[0].Completion.Path != "{task_id}/toggle.md" {
		t.Fatalf("version 2: %+v %v", v2, err)
	}
	t.Logf("screenshots in %s", dir)
}

// adminShot is the action that saves a full screenshot as dir/admin-<name>.png.
func adminShot(dir string) func(name string) chromedp.Action[chromedp.Void] {
	return func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "admin-"+name+".png"), buf, 0o644)
		})
	}
}

// seedFeatureFlow saves the feature-flow template and the claude-dev worker the tour
// opens, and returns the worker.
func seedFeatureFlow(t *testing.T, e *admEnv) *models.Agent {
	t.Helper()
	bg := context.Background()
	tpl := &models.Template{Name: "feature-flow", Description: "Build, then review", Steps: []models.Step{
		{Name: "Build", Role: "developer", Brief: "Build the dark mode toggle.", Completion: contract.Completion{Path: "{task_id}/output.md", MinLength: 100, Verify: []string{"go test ./..."}},
			Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "Toggle renders", Pattern: "DarkModeToggle"}}}},
		{Name: "Review", Role: "reviewer", Brief: "Review the toggle.", Completion: contract.Completion{Type: contract.CompletionNone}},
	}}
	if err := e.svc.Templates.SaveTemplate(bg, models.System, tpl); err != nil {
		t.Fatal(err)
	}
	w := &models.Agent{Name: "claude-dev", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "claude -p --output-format json", Concurrency: 2}
	if err := e.svc.Agents.CreateAgent(bg, models.System, w, ""); err != nil {
		t.Fatal(err)
	}
	return w
}

// browseRefusedSave signs in as ada, saves a path leading out of the workspace, and
// checks the error beside the field, nothing stored.
func browseRefusedSave(t *testing.T, ctx context.Context, e *admEnv, base string, path0 chromedp.CSS, shot func(string) chromedp.Action[chromedp.Void]) {
	t.Helper()
	bg := context.Background()
	errSel := byTestID("steps[0].completion.path-error")

	var errText, fieldVal string
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login?next=/templates"),
		chromedp.WaitVisible(byTestID("login-name")),
		chromedp.SendKeys(byTestID("login-name"), "ada"),
		chromedp.SendKeys(byTestID("login-password"), admPassword),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("templates-table")),
		shot("templates"),

		chromedp.Click(chromedp.CSS(`a[href="/templates/feature-flow"]`)),
		// The editor has loaded (its form and its scripts) before anything in it is
		// touched: a node found while the page was still changing can be gone by the
		// time it is clicked ("Could not find node with given id").
		chromedp.WaitVisible(byTestID("template-form")),
		// Steps are collapsed to a line: open step 1.
		chromedp.Click(byTestID("step-summary-0")),
		chromedp.WaitVisible(path0),
		chromedp.SetValue(path0, "../../etc/passwd"),
		chromedp.Click(byTestID("op-save")),
		chromedp.WaitVisible(errSel),
		read(chromedp.Text(errSel), &errText),
		read(chromedp.Value(path0), &fieldVal),
		shot("template-error"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errText, "must stay inside the task workspace") || fieldVal != "../../etc/passwd" {
		t.Fatalf("error %q beside a field holding %q", errText, fieldVal)
	}
	// The error element belongs to the same field as the input.
	sameField, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function(){
		var i = document.querySelector('[data-testid="steps[0].completion.path"]');
		var e = document.querySelector('[data-testid="steps[0].completion.path-error"]');
		return i.closest('.field') === e.closest('.field') && i.getAttribute('aria-invalid') === 'true';
	})()`))
	if err != nil || !sameField {
		t.Fatalf("the error is not beside the path input (%v)", err)
	}
	if v, _ := e.db.GetTemplate(bg, "feature-flow", 0); v.Version != 1 {
		t.Fatalf("a refused save stored version %d", v.Version)
	}
}
