package pages_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models/contract"
)

// visibleCompletion lists the completion inputs of step 0 a person sees, by their
// name below the step, in page order.
const visibleCompletion = `Array.from(document.querySelectorAll('[name^="steps[0].completion."]'))
	.filter(el => el.checkVisibility()).map(el => el.name.slice('steps[0].'.length)).join(',')`

// TestBrowserTemplateStepFieldsFitItsType drives the template editor in headless
// Chromium: an open step of completion type file shows the inputs of that type only
// (no signal value), its advanced inputs inside a closed "Advanced" disclosure;
// choosing signal, then none, in the form shows that type's inputs instead (the
// others hidden and not sent); opening Advanced shows the rest; the saved step has
// the type chosen and no path. Screenshots go to ./artifacts.
func TestBrowserTemplateStepFieldsFitItsType(t *testing.T) {
	t.Parallel()
	ctx := chrome(t)
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "typed", 1)
	run(t, ctx, "sign in and open step 1",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(e.srv.URL+"/login?next=/templates/typed"),
		chromedp.WaitVisible(byTestID("login-name")),
		chromedp.SendKeys(byTestID("login-name"), "ada"),
		chromedp.SendKeys(byTestID("login-password"), admPassword),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("step-summary-0")),
		chromedp.Click(byTestID("step-summary-0")),
		chromedp.WaitVisible(byTestID("steps[0].brief")),
		shot(t, "file"),
	)
	basic := "completion.type,%s,completion.max_attempts,completion.verify,completion.evaluate"
	expect := func(what, typed string) {
		t.Helper()
		want := strings.Replace(basic, "%s", typed, 1)
		want = strings.ReplaceAll(want, ",,", ",")
		if got := evalJS[string](t, ctx, visibleCompletion); got != want {
			t.Fatalf("%s: the step shows %s, want %s", what, got, want)
		}
	}
	expect("type file", "completion.path,completion.min_length")

	// The advanced inputs are inside the step's closed Advanced disclosure.
	var advanced []string
	for _, f := range contract.CompletionFormFields() {
		if f.Advanced {
			advanced = append(advanced, `"steps[0].`+f.Name+`"`)
		}
	}
	if len(advanced) == 0 {
		t.Fatal("no advanced completion input")
	}
	inClosed := evalJS[bool](t, ctx, `(function(){
		const d = document.querySelector('[data-testid="advanced-0"]');
		if (!d || d.tagName !== 'DETAILS' || d.open) return false;
		return [`+strings.Join(advanced, ",")+`].every(n => {
			const el = document.querySelector('[name="' + n + '"]');
			return el && d.contains(el) && !el.checkVisibility();
		});
	})()`)
	if !inClosed {
		t.Fatal("the advanced inputs are not inside a closed Advanced disclosure")
	}

	choose := func(typ string) {
		t.Helper()
		run(t, ctx, "choose "+typ,
			chromedp.SetValue(byTestID("steps[0].completion.type"), typ),
			read(chromedp.Evaluate[bool](`document.querySelector('[data-testid="steps[0].completion.type"]').dispatchEvent(new Event('change', {bubbles: true}))`), new(bool)),
			shot(t, typ),
		)
	}
	choose("signal")
	expect("type signal", "completion.path,completion.signal")
	choose("none")
	expect("type none", "")
	if !evalJS[bool](t, ctx, `document.querySelector('[name="steps[0].completion.path"]').disabled`) {
		t.Fatal("the hidden path is still sent")
	}

	run(t, ctx, "open Advanced", chromedp.Click(byTestID("advanced-summary-0")), chromedp.WaitVisible(byTestID("steps[0].completion.cooldown")), shot(t, "advanced"))
	if got := evalJS[string](t, ctx, visibleCompletion); !strings.Contains(got, "completion.timeout") || !strings.Contains(got, "completion.checklist.path") {
		t.Fatalf("Advanced open shows %s", got)
	}

	run(t, ctx, "save", chromedp.Click(byTestID("op-save")), chromedp.WaitVisible(byTestID("flash")))
	tpl, err := e.db.GetTemplate(context.Background(), "typed", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := tpl.Steps[0].Completion; tpl.Version != 2 || c.Type != contract.CompletionNone || c.Path != "" {
		t.Fatalf("saved version %d, completion %+v", tpl.Version, c)
	}
}
