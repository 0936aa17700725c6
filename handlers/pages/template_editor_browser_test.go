package pages_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner"
)

// dialogLog records the JavaScript dialogs of a tab (alert, confirm, beforeunload) and
// accepts each one, so that a page asking "leave with unsaved changes?" does not hang
// the test.
type dialogLog struct {
	mu    sync.Mutex
	types []string
}

func (d *dialogLog) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.types...)
}

// acceptDialogs starts accepting the dialogs of ctx's tab and records their types.
func acceptDialogs(ctx context.Context) *dialogLog {
	d := &dialogLog{}
	opening := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range opening {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.types = append(d.types, string(ev.Type))
			d.mu.Unlock()
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true})
					return err
				}))
			}()
		}
	}()
	return d
}

// viewShot saves a screenshot of what the window shows (the sticky preview beside the
// open step) as <test>-<name>.png.
func viewShot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(artifacts(t), t.Name()+"-"+name+".png"), buf, 0o644)
	})
}

// evalJS runs a script in the page and returns its value.
func evalJS[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

// waitJS polls script until it returns true (or fails the test after 10 seconds).
func waitJS(t *testing.T, ctx context.Context, what, script string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](script))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openSteps lists the indexes (data-step) of the open steps, in page order.
const openSteps = `Array.from(document.querySelectorAll('[data-steps] > .tpl-step-card')).filter(s => s.querySelector('details.tpl-step').open).map(s => s.dataset.step).join(',')`

// TestBrowserTemplateEditorSteps drives the template editor in headless Chromium at
// 1280×800 on a template of 10 steps: collapsed it fits one screen; steps open one at
// a time; the open step's preview is the runner's brief and follows the typing; a
// drag moves the last step first and Save stores that order; leaving with unsaved
// changes asks first. Screenshots go to ./artifacts.
func TestBrowserTemplateEditorSteps(t *testing.T) {
	t.Parallel()
	ctx := chrome(t)
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "ten-steps", 10)
	dialogs := acceptDialogs(ctx)
	base := e.srv.URL

	run(t, ctx, "sign in",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base+"/login?next=/templates/ten-steps"),
		chromedp.WaitVisible(byTestID("login-name")),
		chromedp.SendKeys(byTestID("login-name"), "ada"),
		chromedp.SendKeys(byTestID("login-password"), admPassword),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("step-summary-9")),
		shot(t, "collapsed"),
	)

	checkCollapsedEditor(t, ctx)
	// One step open at a time.
	run(t, ctx, "open step 3", chromedp.Click(byTestID("step-summary-2")), chromedp.WaitVisible(byTestID("steps[2].brief")))
	run(t, ctx, "open step 6", chromedp.Click(byTestID("step-summary-5")), chromedp.WaitVisible(byTestID("steps[5].brief")))
	// The script closes the others on the toggle event, which follows the click.
	waitJS(t, ctx, "step 6 alone open", openSteps+` === '5'`)

	browsePreview(t, ctx, e)
	browseRenameStep(t, ctx)
	browseDragLastStepFirst(t, ctx)
	// Save stores the new order and the edit.
	run(t, ctx, "save",
		chromedp.Click(byTestID("op-save")),
		chromedp.WaitVisible(byTestID("flash")),
		shot(t, "saved"),
	)
	tpl, err := e.db.GetTemplate(context.Background(), "ten-steps", 0)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tpl.Steps))
	for i, s := range tpl.Steps {
		names[i] = s.Name
	}
	if tpl.Version != 2 || strings.Join(names[:3], ",") != "Part 10,Part 1,Part 2" || names[6] != "Part 6 bis" || tpl.Steps[6].Completion.MinLength != 250 ||
		!strings.HasSuffix(tpl.Steps[6].Brief, "XYZZY flag.") {
		t.Fatalf("saved version %d: %q, step 7 %+v", tpl.Version, names, tpl.Steps[6])
	}
	if n := len(dialogs.list()); n != 0 {
		t.Fatalf("saving asked %d question(s): %v", n, dialogs.list())
	}

	browseLeaving(t, ctx, e, base, dialogs)
}

// checkCollapsedEditor checks that, collapsed, the editor of 10 steps fits one
// 1280×800 screen and each summary line says what its step is.
func checkCollapsedEditor(t *testing.T, ctx context.Context) {
	t.Helper()
	// Collapsed, the editor of 10 steps fits one 1280×800 screen.
	if got := evalJS[string](t, ctx, openSteps); got != "" {
		t.Fatalf("open on load: %q", got)
	}
	height := evalJS[float64](t, ctx, `Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)`)
	// The footer sits at the window's bottom when the page is shorter: say where the
	// editor itself ends too.
	editorEnd := evalJS[float64](t, ctx, `document.querySelector('.grid-main').getBoundingClientRect().bottom + window.scrollY`)
	t.Logf("document height, 10 steps collapsed: %.0f px (the editor ends at %.0f px)", height, editorEnd)
	if height > 800 {
		t.Fatalf("the collapsed editor of 10 steps is %.0f px tall, more than one 800 px screen", height)
	}
	if got := text(t, ctx, `[data-testid="step-summary-3"]`); !strings.Contains(got, "Step 4") || !strings.Contains(got, "Part 4") ||
		!strings.Contains(got, "role-4") || !strings.Contains(got, "verifiable") || !strings.Contains(got, "1 criterion") {
		t.Fatalf("summary line of step 4: %q", got)
	}
}

// browsePreview checks that the preview of the open step is the runner's brief and
// follows the typing.
func browsePreview(t *testing.T, ctx context.Context, e *admEnv) {
	t.Helper()
	// The preview of the open step is the runner's brief, and follows the typing.
	waitJS(t, ctx, "the preview of step 6", `(document.querySelector('[data-testid="preview-title"]')||{}).textContent === 'Preview: step 6'`)
	run(t, ctx, "edit step 6's brief",
		chromedp.SendKeys(byTestID("steps[5].brief"), kb.End+" Mention the XYZZY flag."),
		chromedp.SendKeys(byTestID("steps[5].completion.min_length"), "250"),
	)
	waitJS(t, ctx, "the preview to show the typed brief",
		`((document.querySelector('[data-testid="preview-brief"]')||{}).textContent||'').includes('XYZZY flag.')`)
	waitJS(t, ctx, "the preview to show the typed length",
		`((document.querySelector('[data-testid="preview-brief"]')||{}).textContent||'').includes('at least 250 bytes')`)
	run(t, ctx, "screenshot", shot(t, "preview"), viewShot(t, "preview-screen"))
	gotBrief := evalJS[string](t, ctx, `document.querySelector('[data-testid="preview-brief"]').textContent`)
	words := text(t, ctx, `[data-testid="preview-words"]`)
	want := runnerBrief(t, e, "ten-steps", 5, func(s *models.Step) {
		s.Brief += " Mention the XYZZY flag."
		s.Completion.MinLength = 250
	})
	if gotBrief != want {
		t.Fatalf("the preview is not the runner's brief:\n--- preview\n%q\n--- runner\n%q", gotBrief, want)
	}
	if !strings.Contains(words, "released when step 5 is verified") || !strings.Contains(words, "(at least 250 bytes)") {
		t.Fatalf("contract in plain words: %q", words)
	}
}

// browseRenameStep checks that the summary line follows the step's name and
// verification type as they are typed.
func browseRenameStep(t *testing.T, ctx context.Context) {
	t.Helper()
	// The summary line follows the step's name and verification type as they are typed.
	run(t, ctx, "rename step 6",
		chromedp.SendKeys(byTestID("steps[5].name"), kb.End+" bis"),
		chromedp.SetValue(byTestID("steps[5].verification.type"), "advisory"),
		read(chromedp.Evaluate[bool](`document.querySelector('[data-testid="steps[5].verification.type"]').dispatchEvent(new Event('change', {bubbles: true}))`), new(bool)),
	)
	if got := text(t, ctx, `[data-testid="step-summary-5"]`); !strings.Contains(got, "Part 6 bis") || !strings.Contains(got, "advisory") {
		t.Fatalf("summary after typing: %q", got)
	}
	waitJS(t, ctx, "the preview to say advisory",
		`((document.querySelector('[data-testid="preview-words"]')||{}).textContent||'').includes('Advisory: no automated checks')`)
	run(t, ctx, "verification back to verifiable",
		chromedp.SetValue(byTestID("steps[5].verification.type"), "verifiable"),
		read(chromedp.Evaluate[bool](`document.querySelector('[data-testid="steps[5].verification.type"]').dispatchEvent(new Event('change', {bubbles: true}))`), new(bool)),
	)
}

// browseDragLastStepFirst drags the last step to the top and checks that the inputs,
// the summaries and the preview follow.
func browseDragLastStepFirst(t *testing.T, ctx context.Context) {
	t.Helper()
	// Drag the last step to the top: the inputs are renumbered, the summaries too.
	drag := `(function(){
		var list = document.querySelector('[data-steps]');
		var from = document.querySelector('[data-testid="step-summary-9"]');
		var to = document.querySelector('[data-testid="step-summary-0"]');
		var dt = new DataTransfer();
		var r = to.getBoundingClientRect();
		function fire(el, type) {
			el.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt, clientX: r.left + 20, clientY: r.top + 2}));
		}
		fire(from, 'dragstart'); fire(to, 'dragenter'); fire(to, 'dragover'); fire(to, 'drop'); fire(from, 'dragend');
		return Array.from(list.children).map(s => s.dataset.step + ':' + s.querySelector('[data-step-num]').textContent + ':' + s.querySelector('input[name$="].name"]').name + '=' + s.querySelector('input[name$="].name"]').value).slice(0, 3).join('|');
	})()`
	order := evalJS[string](t, ctx, drag)
	if order != "0:Step 1:steps[0].name=Part 10|1:Step 2:steps[1].name=Part 1|2:Step 3:steps[2].name=Part 2" {
		t.Fatalf("after dragging step 10 first: %s", order)
	}
	if up := evalJS[bool](t, ctx, `document.querySelector('[data-testid="op-up-0"]').disabled && !document.querySelector('[data-testid="op-up-1"]').disabled`); !up {
		t.Fatal("after the drag, the first step's Up is not the one disabled")
	}
	// The open step moved with its inputs: it is now step 7, and so is its preview.
	waitJS(t, ctx, "the preview to follow the moved step", `(document.querySelector('[data-testid="preview-title"]')||{}).textContent === 'Preview: step 7'`)
	run(t, ctx, "screenshot", shot(t, "dragged"))
}

// browseLeaving checks that leaving a page with no change asks nothing, and with a
// change asks first, nothing saved.
func browseLeaving(t *testing.T, ctx context.Context, e *admEnv, base string, dialogs *dialogLog) {
	t.Helper()
	// Leaving a page with no change asks nothing; with a change, it asks first.
	run(t, ctx, "leave unchanged",
		chromedp.Click(byTestID("step-summary-1")),
		chromedp.Navigate(base+"/templates"),
		chromedp.WaitVisible(byTestID("templates-table")),
		chromedp.Navigate(base+"/templates/ten-steps"),
		chromedp.WaitVisible(byTestID("step-summary-0")),
	)
	if n := len(dialogs.list()); n != 0 {
		t.Fatalf("leaving an unchanged editor asked: %v", dialogs.list())
	}
	run(t, ctx, "leave changed",
		chromedp.SendKeys(byTestID("description"), " (edited)"),
		chromedp.Navigate(base+"/templates"),
		chromedp.WaitVisible(byTestID("templates-table")),
	)
	if got := dialogs.list(); len(got) != 1 || got[0] != string(cdppage.DialogTypeBeforeunload) {
		t.Fatalf("leaving an edited form: dialogs %v, want one beforeunload", got)
	}
	if v, _ := e.db.GetTemplate(context.Background(), "ten-steps", 0); v.Version != 2 {
		t.Fatalf("leaving saved version %d", v.Version)
	}
}

// runnerBrief is the brief runner.PreviewBrief writes for step i of the stored
// template name after edit, as the editor's preview shows it (task 42, /workspace).
func runnerBrief(t *testing.T, e *admEnv, name string, i int, edit func(*models.Step)) string {
	t.Helper()
	tpl, err := e.db.GetTemplate(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	edit(&tpl.Steps[i])
	task, err := e.svc.Templates.PreviewStepTask(context.Background(), tpl, i, 42)
	if err != nil {
		t.Fatal(fmt.Errorf("preview task: %w", err))
	}
	return runner.PreviewBrief(task, "/workspace")
}

// TestBrowserTemplateEditorErrorsOpen: a refused save shows every step with a field
// error open (the script's one-open-at-a-time rule leaves them alone), the others
// collapsed, each error beside its field.
func TestBrowserTemplateEditorErrorsOpen(t *testing.T) {
	t.Parallel()
	ctx := chrome(t)
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "three", 3)
	run(t, ctx, "sign in",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(e.srv.URL+"/login?next=/templates/three"),
		chromedp.WaitVisible(byTestID("login-name")),
		chromedp.SendKeys(byTestID("login-name"), "ada"),
		chromedp.SendKeys(byTestID("login-password"), admPassword),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("step-summary-2")),
	)
	evalJS[bool](t, ctx, `(function(){
		document.querySelector('[name="steps[0].completion.path"]').value = '/etc/passwd';
		document.querySelector('[name="steps[2].completion.path"]').value = '../../out.md';
		document.querySelector('[data-testid="op-save"]').click();
		return true;
	})()`)
	run(t, ctx, "the refused save", chromedp.WaitVisible(byTestID("error-summary")), chromedp.Sleep(500*time.Millisecond), shot(t, "errors"))
	if got := evalJS[string](t, ctx, openSteps); got != "0,2" {
		t.Fatalf("open steps after a refused save: %q, want 0,2", got)
	}
	for _, id := range []string{"steps[0].completion.path-error", "steps[2].completion.path-error", "step-errors-0", "step-errors-2"} {
		if !evalJS[bool](t, ctx, `!!document.querySelector('[data-testid="`+id+`"]') && document.querySelector('[data-testid="`+id+`"]').offsetParent !== null`) {
			t.Fatalf("%s is not shown", id)
		}
	}
	// Opening another step by hand closes the others.
	run(t, ctx, "open step 2", chromedp.Click(byTestID("step-summary-1")), chromedp.WaitVisible(byTestID("steps[1].brief")))
	waitJS(t, ctx, "step 2 alone open", openSteps+` === '1'`)
}
