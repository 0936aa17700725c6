package pages_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// signInWith signs name in with password in a browser session of its own, ending on
// path.
func signInWith(t *testing.T, e *env, name, password, path string) context.Context {
	t.Helper()
	ctx := chrome(t)
	signInAs(t, ctx, e, name, password, path)
	return ctx
}

// setPassword fills the agent page's password form (current is left out when "")
// and waits for the page's answer.
func setPassword(t *testing.T, ctx context.Context, current, next string) {
	t.Helper()
	form := `[data-testid="agent-password-form"] `
	var acts []chromedp.Action[chromedp.Void]
	if current != "" {
		acts = append(acts, chromedp.SendKeys(chromedp.CSS(form+`input[name="current_password"]`), current))
	}
	acts = append(acts,
		chromedp.SendKeys(chromedp.CSS(form+`input[name="password"]`), next),
		chromedp.SendKeys(chromedp.CSS(form+`input[name="password_confirm"]`), next),
		chromedp.Click(byTestID("agent-password-submit")),
		chromedp.WaitVisible(byTestID("flash")),
	)
	run(t, ctx, "set the password", acts...)
}

// TestBrowserPasswordDeadEnd: the demo's dead end, walked in Chromium by two people in
// sessions of their own. The admin sets the tester's password on the tester's page;
// the tester signs in with it and changes it to one of their own on the same page;
// only that one signs in afterwards.
func TestBrowserPasswordDeadEnd(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	tester := "/agents/" + itoa64(e.agents["tester"].ID)

	admin := signInWith(t, e, "admin", testPassword, tester)
	run(t, admin, "the tester's page", chromedp.WaitVisible(byTestID("agent-password-form")), shot(t, "admin-sets"))
	setPassword(t, admin, "", "given-by-the-admin")

	me := signInWith(t, e, "tester", "given-by-the-admin", tester)
	run(t, me, "my page", chromedp.WaitVisible(chromedp.CSS(`input[name="current_password"]`)), shot(t, "tester-changes"))
	setPassword(t, me, "given-by-the-admin", "the-testers-own-choice")

	signInWith(t, e, "tester", "the-testers-own-choice", "/")
	old := chrome(t)
	run(t, old, "the admin's password no longer signs in",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.SendKeys(byTestID("login-name"), "tester"),
		chromedp.SendKeys(byTestID("login-password"), "given-by-the-admin"),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("login-form")),
	)
	if n := eval[int](t, old, `document.querySelectorAll('[data-testid="nav-agent"]').length`); n != 0 {
		t.Fatal("the replaced password still signs in")
	}
}

// TestBrowserDiagnosisShownOnce: in Chromium, the inbox card and the task page of a
// task blocked twice with the same diagnosis read its sentence once, name its stage
// once and show no server path.
func TestBrowserDiagnosisShownOnce(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	tk := e.noisyBlockedTask("Publish the guide")
	ctx := chrome(t)
	signIn(t, ctx, e, "exec", "/inbox")
	for _, path := range []string{"/inbox", "/tasks/" + itoa64(tk.ID)} {
		run(t, ctx, path, chromedp.Navigate(e.srv.URL+path), chromedp.WaitVisible(byTestID("page-title")),
			shot(t, strings.Trim(strings.ReplaceAll(path, "/", "-"), "-")))
		page := eval[string](t, ctx, `document.body.innerText`)
		if n := strings.Count(page, "while admitting failure"); n != 1 {
			t.Errorf("%s reads the diagnosis %d times, want once", path, n)
		}
		for _, bad := range []string{"contradiction: contradiction", "/srv/data", "tasks/1/1/"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s reads %q", path, bad)
			}
		}
	}
}
