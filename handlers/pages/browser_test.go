package pages_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers/live"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// chromium is Debian's headless-capable Chromium.
const chromium = "/usr/bin/chromium"

// browserProc is the one headless Chromium the package's browser tests share: it
// starts with the first test that needs it and stops in TestMain. Each test gets a
// browser context of its own in it (see chrome).
var browserProc struct {
	once   sync.Once
	ctx    context.Context // the browser's chromedp context; nil when it did not start
	stop   func()
	err    error // why it did not start
	found  bool  // the executable exists
	lookup error
}

// startBrowser starts the shared Chromium once, with a profile in a temp dir.
func startBrowser() {
	browserProc.once.Do(func() {
		if _, err := exec.LookPath(chromium); err != nil {
			browserProc.lookup = err
			return
		}
		browserProc.found = true
		dir, err := os.MkdirTemp("", "countersign-chromium-")
		if err != nil {
			browserProc.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromium),
			chromedp.UserDataDir(dir),
			chromedp.Flag("headless", true),
			chromedp.Flag("no-sandbox", true),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.WindowSize(1280, 900),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(actx)
		browserProc.stop = func() { cancelCtx(); cancelAlloc(); os.RemoveAll(dir) }
		// The first run starts the browser, which lives as long as the context of
		// that run: ctx itself, not one with a deadline.
		if err := chromedp.Do(ctx); err != nil {
			browserProc.err = err
			browserProc.stop()
			browserProc.stop = nil
			return
		}
		browserProc.ctx = ctx
	})
}

// TestMain stops the shared Chromium, if a test started it, after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if browserProc.stop != nil {
		browserProc.stop()
	}
	os.Exit(code)
}

// chrome opens a tab in a fresh browser context (its own cookies, storage and cache:
// a fresh profile for one signed-in user) of the shared headless Chromium, closed
// with the test, or skips (fails with CI=true) when Chromium is missing or does not
// start.
func chrome(t *testing.T) context.Context {
	t.Helper()
	startBrowser()
	if !browserProc.found {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found at %s: %v", chromium, browserProc.lookup)
		}
		t.Skipf("chromium not found at %s: %v", chromium, browserProc.lookup)
	}
	if browserProc.ctx == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("start chromium: %v", browserProc.err)
		}
		t.Skipf("chromium does not start: %v", browserProc.err)
	}
	ctx, cancelCtx := chromedp.NewContext(browserProc.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab in chromium: %v", err)
	}
	return ctx
}

// artifacts is where screenshots go: $COUNTERSIGN_ARTIFACTS or a temp dir.
func artifacts(t *testing.T) string {
	dir := os.Getenv("COUNTERSIGN_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shot saves a full-page screenshot of the current page as <test>-<name>.png.
func shot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		file := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + name + ".png"
		return os.WriteFile(filepath.Join(artifacts(t), file), buf, 0o644)
	})
}

// run runs actions and fails the test with the step's name on error.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// signIn opens path, lands on the login page and signs in as name; the browser ends
// on path.
func signIn(t *testing.T, ctx context.Context, e *env, name, path string) {
	t.Helper()
	signInAs(t, ctx, e, name, testPassword, path)
}

// signInAs is signIn with a password of the caller's.
func signInAs(t *testing.T, ctx context.Context, e *env, name, password, path string) {
	t.Helper()
	run(t, ctx, "sign in as "+name,
		chromedp.Navigate(e.srv.URL+path),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-form"]`)),
		shot(t, "login"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="login-name"]`), name),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="login-password"]`), password),
		chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="nav-agent"]`)),
	)
}

// eval runs a JavaScript expression in the tab and returns its value, failing the
// test on error.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// newBrowserEnv is a server with the dashboard and the live hub at /ws.
func newBrowserEnv(t *testing.T) *env {
	t.Helper()
	db := storetest.Open(t, "sqlite")
	hub := live.New(db, nil, live.Options{PollInterval: 200 * time.Millisecond})
	e := newEnvOn(t, db, envOptions{extra: []func(*echo.Echo){hub.Register}})
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
	return e
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)

	t.Run("login", func(t *testing.T) {
		ctx := chrome(t)
		signIn(t, ctx, e, "lead", "/")
		run(t, ctx, "overview", chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-stats"]`)), shot(t, "overview"))
		if got := text(t, ctx, `[data-testid="nav-agent"]`); got != "lead" {
			t.Fatalf("signed in as %q", got)
		}
		for _, p := range []string{"/goals", "/tasks", "/inbox"} {
			run(t, ctx, p, chromedp.Navigate(e.srv.URL+p), chromedp.WaitVisible(chromedp.CSS(`[data-testid="page-title"]`)),
				shot(t, strings.Trim(p, "/")))
		}
	})

	t.Run("verify goal", func(t *testing.T) {
		g := e.pendingGoal("Browser verify <b>goal</b>")
		ctx := chrome(t)
		signIn(t, ctx, e, "lead", "/goals/"+itoa64(g.ID))
		run(t, ctx, "verify",
			shot(t, "before"),
			chromedp.SendKeys(chromedp.CSS(`[data-testid="goal-verify-notes"]`), "Clicked through the integrated build"),
			chromedp.Click(chromedp.CSS(`[data-testid="goal-verify"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
			shot(t, "after"),
		)
		if got := text(t, ctx, `[data-testid="goal-state"]`); got != "verified" {
			t.Fatalf("goal state on the page: %q", got)
		}
		if s := e.goalState(g.ID); s != models.GoalVerified {
			t.Fatalf("goal state: %s", s)
		}
	})

	t.Run("reject goal with fix task", func(t *testing.T) {
		browseRejectGoal(t, e)
	})

	t.Run("retry blocked task from inbox", func(t *testing.T) {
		bt := e.blockedTask("Browser blocked task", nil)
		ctx := chrome(t)
		signIn(t, ctx, e, "exec", "/inbox")
		item := `[data-task-id="` + itoa64(bt.ID) + `"] `
		run(t, ctx, "retry",
			chromedp.WaitVisible(chromedp.CSS(item+`[data-testid="inbox-criteria"]`)),
			shot(t, "inbox"),
			chromedp.SendKeys(chromedp.CSS(item+`[data-testid="inbox-retry-reason"]`), "Write out/ID.md before running the tests"),
			chromedp.Click(chromedp.CSS(item+`[data-testid="inbox-retry"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
			shot(t, "after"),
		)
		tk, err := e.svc.Store().GetTask(e.ctx(), bt.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != models.TaskAssigned || tk.Reason != "Write out/ID.md before running the tests" {
			t.Fatalf("after retry: %s %q", tk.State, tk.Reason)
		}
	})

	t.Run("judge's report on the task page", func(t *testing.T) {
		browseJudgeReport(t, e)
	})

	t.Run("task page changes state live", func(t *testing.T) {
		browseLiveState(t, e)
	})
}

// browseRejectGoal has the lead reject a goal with a fix task, in the browser.
func browseRejectGoal(t *testing.T, e *env) {
	t.Helper()
	g := e.pendingGoal("Browser reject goal")
	ctx := chrome(t)
	acceptDialogs(ctx) // "Reject this goal?"
	signIn(t, ctx, e, "lead", "/goals/"+itoa64(g.ID))
	run(t, ctx, "reject",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="goal-reject-reason"]`), "The login page 500s"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="fix-0-title"]`), "Fix the login 500"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="fix-0-brief"]`), "Reproduce and fix the error on /login."),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="fix-0-role"]`), "developer"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="fix-0-assignee"]`), "dev"),
		shot(t, "filled"),
		chromedp.Click(chromedp.CSS(`[data-testid="goal-reject"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-group-assigned"]`)),
		shot(t, "after"),
	)
	if s := e.goalState(g.ID); s != models.GoalActive {
		t.Fatalf("goal state: %s", s)
	}
	if got := text(t, ctx, `[data-testid="goal-group-assigned"]`); !strings.Contains(got, "Fix the login 500") {
		t.Fatalf("fix task not listed: %q", got)
	}
}

// browseJudgeReport checks the judge's report on the task page, its diff's markup
// shown as text.
func browseJudgeReport(t *testing.T, e *env) {
	t.Helper()
	tk := e.judgedTask("Browser judged task", true, tamperAttempt())
	ctx := chrome(t)
	signIn(t, ctx, e, "dev", "/tasks/"+itoa64(tk.ID))
	run(t, ctx, "judge",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tests-changed-warning"]`)),
		chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="judge-tests-changed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="judge-floor"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="judge-held-out"]`)),
		shot(t, "judge"),
	)
	if got := text(t, ctx, `[data-testid="tests-changed-warning"]`); got != "tests changed by the worker" {
		t.Fatalf("warning %q", got)
	}
	// The diff's markup is text on the page, not elements.
	if got := text(t, ctx, `[data-testid="judge-diff"]`); !strings.Contains(got, "<script>alert(1)</script>") {
		t.Fatalf("diff as shown: %q", got)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="judge-diff"] script').length`))
	if err != nil || n != 0 {
		t.Fatalf("the diff's markup became %d elements: %v", n, err)
	}
}

// browseLiveState checks that the task page changes state live, without a reload.
func browseLiveState(t *testing.T, e *env) {
	t.Helper()
	tk := e.humanTask("Browser live task", nil, models.TaskAssigned)
	ctx := chrome(t)
	signIn(t, ctx, e, "lead", "/tasks/"+itoa64(tk.ID))
	run(t, ctx, "mark the page",
		chromedp.WaitVisible(chromedp.CSS(`[data-live-status][data-state="live"]`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[int](`window.__noReload = 1`)(ctx, tg)
			return err
		}),
		shot(t, "before"),
	)
	if got := text(t, ctx, `[data-testid="task-state"]`); got != "assigned" {
		t.Fatalf("initial state %q", got)
	}
	e.act("dev", tk.ID, models.ActStart, models.ActionInput{})
	run(t, ctx, "wait for the live update",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-state"] [data-state="in_progress"]`)),
		shot(t, "after"),
	)
	marker, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload || 0`))
	if err != nil {
		t.Fatal(err)
	}
	if marker != 1 {
		t.Fatal("the page reloaded instead of updating live")
	}
}
