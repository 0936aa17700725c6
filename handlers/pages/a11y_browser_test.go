package pages_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers/live"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
)

// a11yPage is one page the accessibility walk opens: its name in screenshots and
// messages, its path, and what to do once it is shown (open a step, say).
type a11yPage struct {
	name  string
	path  string
	after []chromedp.Action[chromedp.Void]
}

// a11ySite is the seeded server the walk runs on and the pages it opens.
type a11ySite struct {
	e       *env
	pages   []a11yPage
	task    int64 // a blocked task with failed checks and the admin's actions
	inboxed int64 // the task whose inbox card the mobile check reads
}

// viewports are the two widths every page is checked at.
var viewports = []struct {
	name          string
	width, height int64
	mobile        bool
}{
	{"1280x800", 1280, 800, false},
	{"390x844", 390, 844, true},
}

// newA11ySite is a server with the live hub and a local ledger, with content on every
// page: goals, tasks in several states (a blocked one with long diagnoses in its
// check table, a judged one with the judge's report), inbox items, a template, a
// worker, ledger entries and a webhook.
func newA11ySite(t *testing.T) *a11ySite {
	t.Helper()
	db := storetest.Open(t, "sqlite")
	hub := live.New(db, nil, live.Options{PollInterval: 200 * time.Millisecond})
	e := newEnvOn(t, db, envOptions{extra: []func(*echo.Echo){hub.Register}, ledger: pagesLocal})
	ctx, cancel := context.WithCancel(context.Background())
	if err := hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer c2()
		_ = hub.Stop(sctx)
		cancel()
	})
	e.team()
	// The walk's admin also leads and execs, so every page shows its forms to it.
	e.agent("root", models.KindHuman, models.RoleAdmin, models.RoleLead, models.RoleExec)
	complete, _ := ledgerEntries(t, &admEnv{e}) // first: it publishes exactly its two entries
	g := e.pendingGoal("Ship the dark mode toggle")
	e.humanTask("Review the toggle's colours", &g.ID, models.TaskReview)
	blocked := e.blockedTask("Write the release notes for the dark mode toggle", &g.ID)
	e.advisoryTask("Summarise last week's incidents")
	judged := e.judgedTask("Make Add add", false, longChecks(tamperAttempt()))
	tpl := seedA11yTemplate(t, e)
	hook := &models.Webhook{Name: "ops", URL: "https://hooks.example.test/T1/B2/c3", Events: []string{"task.blocked"}, Enabled: true, Secret: "s3cret-s3cret-s3cret"}
	if err := db.CreateWebhook(e.ctx(), hook); err != nil {
		t.Fatal(err)
	}
	openStep := []chromedp.Action[chromedp.Void]{chromedp.Click(byTestID("step-summary-0")), chromedp.WaitVisible(byTestID("steps[0].completion.path"))}
	s := &a11ySite{e: e, task: blocked.ID, inboxed: blocked.ID}
	s.pages = []a11yPage{
		{name: "overview", path: "/"},
		{name: "tasks", path: "/tasks"},
		{name: "task", path: "/tasks/" + itoa64(blocked.ID)},
		{name: "task-judged", path: "/tasks/" + itoa64(judged.ID)},
		{name: "inbox", path: "/inbox"},
		{name: "queue", path: "/queue"},
		{name: "search", path: "/search?q=task"},
		{name: "goals", path: "/goals"},
		{name: "goal", path: "/goals/" + itoa64(g.ID)},
		{name: "goal-new", path: "/goals/new"},
		{name: "agents", path: "/agents"},
		{name: "agent", path: "/agents/" + itoa64(e.agents["bot"].ID)},
		{name: "agent-scorecard", path: "/agents/" + itoa64(e.agents["bot"].ID) + "/scorecard"},
		{name: "templates", path: "/templates"},
		{name: "template-editor", path: "/templates/" + tpl, after: openStep},
		{name: "template-import", path: "/templates/import"},
		{name: "rules", path: "/rules"},
		{name: "ledger", path: "/ledger"},
		{name: "ledger-entry", path: "/ledger/" + itoa64(complete.ID)},
		{name: "webhooks", path: "/webhooks"},
		{name: "webhook", path: "/webhooks/" + itoa64(hook.ID)},
		{name: "error", path: "/tasks/999999"},
	}
	return s
}

// longChecks gives an attempt's checks the long diagnoses (a long command line, a
// path) that made the check table wider than a phone.
func longChecks(a models.Attempt) models.Attempt {
	a.Checks = append(a.Checks, models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictFail,
		Diagnosis: "go test ./internal/very/long/package/path/that/does/not/wrap/at/all/...=exited_with_status_1_after_12.4s"})
	return a
}

// seedA11yTemplate saves a two-step template and returns its name.
func seedA11yTemplate(t *testing.T, e *env) string {
	t.Helper()
	tpl := &models.Template{Name: "feature-flow", Description: "Build, then review", Steps: []models.Step{
		{Name: "Build", Role: "developer", Brief: "Build the dark mode toggle.", Completion: contract.Completion{Path: "{task_id}/output.md", MinLength: 100, Verify: []string{"go test ./..."}},
			Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "Toggle renders", Pattern: "DarkModeToggle"}}}},
		{Name: "Review", Role: "reviewer", Brief: "Review the toggle.", Completion: contract.Completion{Type: contract.CompletionNone}},
	}}
	if err := e.svc.Templates.SaveTemplate(e.ctx(), models.System, tpl); err != nil {
		t.Fatal(err)
	}
	return tpl.Name
}

// TestBrowserAccessibility opens every page, with content, as an admin (who also
// leads and execs, so that the pages show it their forms) at 1280×800
// and at 390×844 (a phone, emulated), screenshots it and runs axe-core's WCAG 2 A and
// AA rules on it. At the phone's width it also checks that the page does not scroll
// sideways, that nothing is clipped (wide tables scroll in their own container), that
// every navigation link can be reached, and that the task page's actions start on the
// first screen.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axeScript(t)
	s := newA11ySite(t)
	pages := append([]a11yPage{{name: "login", path: "/login"}}, s.pages...)
	for _, vp := range viewports {
		// A few pages per browser tab, each tab signed in afresh: a tab lives two
		// minutes (chrome) and axe takes seconds a page.
		for from := 0; from < len(pages); from += 6 {
			part := pages[from:min(from+6, len(pages))]
			t.Run(vp.name+"/"+part[0].name, func(t *testing.T) {
				ctx := s.tab(t, vp.width, vp.height, vp.mobile, part[0].path != "/login")
				for _, p := range part {
					if p.path == "/login" {
						s.check(t, ctx, vp.name, vp.width, p)
						signIn(t, ctx, s.e, "root", "/")
						continue
					}
					s.check(t, ctx, vp.name, vp.width, p)
				}
			})
		}
		if vp.mobile {
			t.Run(vp.name+"/actions", func(t *testing.T) {
				s.checkPhoneActions(t, s.tab(t, vp.width, vp.height, vp.mobile, true))
			})
		}
	}
}

// tab opens a browser tab at the given size, signed in as the walk's admin when
// signedIn.
func (s *a11ySite) tab(t *testing.T, width, height int64, mobile, signedIn bool) context.Context {
	t.Helper()
	ctx := chrome(t)
	emulate := chromedp.EmulateViewport(width, height)
	if mobile {
		emulate = chromedp.EmulateViewport(width, height, chromedp.EmulateMobile)
	}
	run(t, ctx, "viewport", emulate)
	if signedIn {
		signIn(t, ctx, s.e, "root", "/")
	}
	return ctx
}

// check opens p, screenshots it as a11y-<size>-<name>.png (a11y-390x844-task.png), runs
// axe-core on it and, at a phone's width, the layout checks.
func (s *a11ySite) check(t *testing.T, ctx context.Context, size string, width int64, p a11yPage) {
	t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(s.e.srv.URL + p.path), chromedp.WaitReady(chromedp.CSS(`footer`))}
	steps = append(steps, p.after...)
	run(t, ctx, p.name, steps...)
	run(t, ctx, p.name+" screenshot", fileShot(filepath.Join(artifacts(t), "a11y-"+size+"-"+p.name+".png")))
	checkAxe(t, ctx, p.name)
	if width < 600 {
		checkNarrow(t, ctx, width, p.name)
	}
}

// fileShot saves a full-page screenshot as file.
func fileShot(file string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(file, buf, 0o644)
	})
}

// narrowLayout is the page-side layout check at a phone's width: how wide the document
// is, the elements whose content is cut off (overflow hidden and wider or taller than
// their box, or reaching past the viewport's right edge), the tables that are wider
// than the viewport outside a scroll container, and the navigation links that cannot
// be reached (outside the viewport or covered) once the menu, if any, is open.
const narrowLayout = `(() => {
	const vw = %d;
	const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
		(el.dataset.testid ? '[data-testid="' + el.dataset.testid + '"]' : '') +
		(el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
	const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
		const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return p; } return null; };
	const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
	const out = {scrollWidth: document.documentElement.scrollWidth, clipped: [], tables: [], nav: []};
	const menu = document.querySelector('.nav-menu:not([open]) > summary');
	if (menu) menu.click();
	for (const el of document.querySelectorAll('body *')) {
		if (!shown(el) || el.closest('.visually-hidden, svg, [hidden], input, textarea, select')) continue;
		const cs = getComputedStyle(el);
		const cuts = ['hidden', 'clip'].includes(cs.overflowX) && cs.textOverflow !== 'ellipsis' &&
			(el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
		const r = el.getBoundingClientRect();
		const past = r.right > vw + 1 && !scrolls(el) && cs.position !== 'fixed';
		if (cuts || past) out.clipped.push(name(el) + (cuts ? ' cuts its content' : ' ends at x=' + Math.round(r.right)));
		if (el.tagName === 'TABLE' && r.width > vw && !scrolls(el)) out.tables.push(name(el));
	}
	for (const a of document.querySelectorAll('header nav a[data-testid^="nav-"]')) {
		const r = a.getBoundingClientRect();
		const hit = r.width > 0 && r.left >= 0 && r.right <= vw + 1 && r.top >= 0 && r.bottom <= innerHeight &&
			a.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2));
		if (!hit) out.nav.push(a.dataset.testid + ' at ' + Math.round(r.left) + ',' + Math.round(r.top));
	}
	if (menu) menu.click();
	return out;
})()`

// narrowResult is what narrowLayout reports.
type narrowResult struct {
	ScrollWidth int64    `json:"scrollWidth"`
	Clipped     []string `json:"clipped"`
	Tables      []string `json:"tables"`
	Nav         []string `json:"nav"`
}

// checkNarrow fails when the current page, at a phone's width, scrolls sideways, cuts
// any content off, shows a wide table outside a scroll container, or has a navigation
// link that cannot be reached.
func checkNarrow(t *testing.T, ctx context.Context, width int64, page string) {
	t.Helper()
	var got narrowResult
	run(t, ctx, page+" layout", chromedp.Evaluate[chromedp.Void](`scrollTo(0, 0)`),
		read(chromedp.Evaluate[narrowResult](strings.Replace(narrowLayout, "%d", itoa64(width), 1)), &got))
	if got.ScrollWidth > width {
		t.Errorf("%s: the page is %d px wide at a %d px viewport (it scrolls sideways)", page, got.ScrollWidth, width)
	}
	if len(got.Clipped) > 0 {
		t.Errorf("%s: content cut off at %d px:\n  %s", page, width, strings.Join(got.Clipped, "\n  "))
	}
	if len(got.Tables) > 0 {
		t.Errorf("%s: tables wider than the viewport outside a scroll container: %s", page, strings.Join(got.Tables, ", "))
	}
	if len(got.Nav) > 0 {
		t.Errorf("%s: navigation links out of reach: %s", page, strings.Join(got.Nav, ", "))
	}
}

// firstActionTop is the distance from the top of the page to the first button of
// the actions in sel.
const firstActionTop = `(() => {
	const b = document.querySelector(%q);
	return b ? Math.round(b.getBoundingClientRect().top + scrollY) : -1;
})()`

// checkPhoneActions fails unless, at a phone's size, the blocked task's first action
// and the first inbox card's first action start on the first screen or near it
// (within 900 px of the top of the page).
func (s *a11ySite) checkPhoneActions(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, c := range []struct{ name, path, sel string }{
		{"task", "/tasks/" + itoa64(s.task), `[data-testid="task-actions"] button[type="submit"]`},
		{"inbox", "/inbox", `[data-task-id="` + itoa64(s.inboxed) + `"] form button[type="submit"]`},
	} {
		var top int
		run(t, ctx, c.name+" actions",
			chromedp.Navigate(s.e.srv.URL+c.path),
			chromedp.WaitReady(chromedp.CSS(`footer`)),
			read(chromedp.Evaluate[int](strings.Replace(firstActionTop, "%q", "'"+c.sel+"'", 1)), &top),
		)
		if top < 0 || top >= 900 {
			t.Errorf("%s at 390 px: the first action's top is at %d px, want it within the first 900 px", c.name, top)
		}
	}
}

// focusRing is the page-side measure of the focus ring of the focused element: whether
// it matches :focus-visible, its outline's style and width, and the contrast of the
// outline's colour against the background behind it (the nearest ancestor's
// non-transparent background), as WCAG computes contrast.
const focusRing = `(() => {
	const parse = c => { const p = (c.match(/rgba?\(([^)]+)\)/) || [, '0,0,0,0'])[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
		return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
	const el = document.activeElement;
	let bg = {r: 255, g: 255, b: 255, a: 1};
	for (let e = el.parentElement; e; e = e.parentElement) {
		const c = parse(getComputedStyle(e).backgroundColor);
		if (c.a > 0) { bg = c; break; }
	}
	const cs = getComputedStyle(el);
	const l1 = lum(parse(cs.outlineColor)), l2 = lum(bg);
	return {what: el.tagName + ' ' + (el.dataset.testid || el.textContent.trim().slice(0, 30)),
		focusVisible: el.matches(':focus-visible'), style: cs.outlineStyle, width: parseFloat(cs.outlineWidth) || 0,
		color: cs.outlineColor, contrast: (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05)};
})()`

// ring is what focusRing reports.
type ring struct {
	What         string  `json:"what"`
	FocusVisible bool    `json:"focusVisible"`
	Style        string  `json:"style"`
	Width        float64 `json:"width"`
	Color        string  `json:"color"`
	Contrast     float64 `json:"contrast"`
}

// tabTo presses Tab until the focused element matches the CSS selector sel, and
// returns its focus ring.
func tabTo(t *testing.T, ctx context.Context, sel string) ring {
	t.Helper()
	for range 40 {
		run(t, ctx, "tab", chromedp.KeyEvent("\t"))
		var on bool
		run(t, ctx, "focused", read(chromedp.Evaluate[bool](`!!document.activeElement && document.activeElement.matches('`+sel+`')`), &on))
		if on {
			var r ring
			run(t, ctx, "focus ring", read(chromedp.Evaluate[ring](focusRing), &r))
			return r
		}
	}
	t.Fatalf("40 presses of Tab never reached %s", sel)
	return ring{}
}

// TestBrowserFocusVisible tabs, as a keyboard user does, to a field of the login
// form, to a link of the dark navigation and to a link in the page's light content,
// and checks each shows a focus ring at least 2 px wide whose colour has a contrast
// of at least 3:1 with the background behind it.
func TestBrowserFocusVisible(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	e.humanTask("A task to tab to", nil, models.TaskAssigned)
	ctx := chrome(t)
	run(t, ctx, "login", chromedp.Navigate(e.srv.URL+"/login"), chromedp.WaitVisible(byTestID("login-form")))
	rings := []ring{tabTo(t, ctx, `[data-testid="login-name"]`)}
	signIn(t, ctx, e, "lead", "/tasks")
	rings = append(rings, tabTo(t, ctx, `.nav-links a`))
	run(t, ctx, "nav focus", shot(t, "nav-focus"))
	rings = append(rings, tabTo(t, ctx, `main a[href^="/tasks/"]`))
	run(t, ctx, "content focus", shot(t, "content-focus"))
	for _, r := range rings {
		if !r.FocusVisible || r.Style == "none" || r.Width < 2 || r.Contrast < 3 {
			t.Errorf("%s: focus ring %s %.1fpx %s, contrast %.2f:1 with its background (focus-visible %v); want ≥ 2px and ≥ 3:1",
				r.What, r.Style, r.Width, r.Color, r.Contrast, r.FocusVisible)
		}
	}
}
