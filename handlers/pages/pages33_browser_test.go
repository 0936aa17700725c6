package pages_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/handlers/live"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// screen is a viewport the layout tests run at: a laptop and a phone.
type screen struct {
	name string
	w, h int64
}

// screens are the two widths every layout check runs at.
var screens = []screen{{"desktop", 1280, 800}, {"phone", 390, 844}}

// atScreen sets the tab's viewport to s (a phone's is a mobile one: touch, no
// scrollbars), as chromedp.EmulateViewport does.
func atScreen(s screen) chromedp.Action[chromedp.Void] {
	if s.w < 600 {
		return chromedp.EmulateViewport(s.w, s.h, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	return chromedp.EmulateViewport(s.w, s.h)
}

// newBrowserEnvWith is newBrowserEnv with envOptions (a lander, say).
func newBrowserEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	db := storetest.Open(t, "sqlite")
	hub := live.New(db, nil, live.Options{PollInterval: 200 * time.Millisecond})
	o.extra = append(o.extra, hub.Register)
	e := newEnvOn(t, db, o)
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

// consoleLog collects what the tab writes to its console (calls of the console API,
// exceptions and the browser's log, where Chromium reports CSP violations).
type consoleLog struct {
	mu   sync.Mutex
	msgs []string
}

// watchConsole starts collecting the console of ctx's tab.
func watchConsole(ctx context.Context) *consoleLog {
	c := &consoleLog{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, m.String())
			c.mu.Unlock()
		}
	}()
	return c
}

// csp returns the messages that report a Content-Security-Policy violation.
func (c *consoleLog) csp() []string {
	time.Sleep(300 * time.Millisecond) // let the last events arrive
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if strings.Contains(m, "Content Security Policy") || strings.Contains(m, "Content-Security-Policy") {
			out = append(out, m)
		}
	}
	return out
}

// longReason is a reason long enough to fill several lines of the Details card.
const longReason = "The demo ops admin asked for the deployment notes first: write out/ID.md with the administration steps, the rollback plan and the contacts before running the tests again"

// detailsLayout measures the Details card: its width, the width of the value cell
// holding the reason, and the words of the reason the browser broke across lines.
type detailsLayout struct {
	Card, Value float64
	Broken      []string
}

// measureDetails is the JavaScript that fills a detailsLayout: each word of the dd
// that holds needle is a Range, and a word that renders as two boxes was broken.
const measureDetails = `(function(needle){
  const card = document.querySelector('[data-testid="task-facts"]');
  const dd = [...card.querySelectorAll('dd')].find(d => d.textContent.includes(needle));
  const text = dd.firstChild && dd.firstChild.nodeType === 3 ? dd.firstChild : [...dd.childNodes].find(n => n.nodeType === 3);
  const broken = [];
  const re = /\S+/g; let m;
  while ((m = re.exec(text.data)) !== null) {
    const r = document.createRange(); r.setStart(text, m.index); r.setEnd(text, m.index + m[0].length);
    const lines = new Set([...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top)));
    if (lines.size > 1) broken.push(m[0]);
  }
  return {Card: card.getBoundingClientRect().width, Value: dd.getBoundingClientRect().width, Broken: broken};
})`

// TestBrowserTaskDetailsLayout: the task page's Details card keeps its value column
// wide when a reason is long, at 1280×800 and at 390×844: the reason's cell takes at
// least 40% of the card and no word of it is broken across lines.
func TestBrowserTaskDetailsLayout(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	bt := e.blockedTask("Details layout", nil)
	e.act("exec", bt.ID, models.ActRetry, models.ActionInput{Reason: longReason})
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			ctx := chrome(t)
			run(t, ctx, "viewport", atScreen(s))
			signIn(t, ctx, e, "exec", "/tasks/"+itoa64(bt.ID))
			run(t, ctx, "details",
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-facts"]`)),
				chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="task-facts"]`)),
				shot(t, "details"))
			got := eval[detailsLayout](t, ctx, measureDetails+`("deployment notes")`)
			if got.Value < 0.4*got.Card {
				t.Errorf("the reason's cell is %.0f px of a %.0f px card, want at least 40%%", got.Value, got.Card)
			}
			if len(got.Broken) > 0 {
				t.Errorf("words broken across lines: %q", got.Broken)
			}
		})
	}
}

// progressBar is a progress bar as rendered: its fill's and its track's widths, and
// its label.
type progressBar struct {
	Fill, Track float64
	Label       string
	Found       bool
}

// measureProgress is the JavaScript that fills a progressBar for the first progress
// bar in the element the selector finds.
const measureProgress = `(function(sel){
  const p = document.querySelector(sel + ' [data-testid="progress"]');
  if (!p) return {Found: false};
  const track = p.querySelector('.progress-track'), bar = p.querySelector('.progress-bar');
  return {Found: true, Track: track ? track.getBoundingClientRect().width : 0,
    Fill: bar ? bar.getBoundingClientRect().width : 0, Label: p.textContent.trim()};
})`

// TestBrowserProgressUnderCSP: under the server's real Content-Security-Policy, a
// goal with 3 of 5 tasks done shows a bar filled to 60% of its track, on its page and
// in the goal list, and an empty goal a bar filled to 0 that says it has no tasks; the
// console reports no CSP violation. At 1280×800 and 390×844.
func TestBrowserProgressUnderCSP(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	three := &models.Goal{Title: "Three of five"}
	empty := &models.Goal{Title: "Nothing yet"}
	for _, g := range []*models.Goal{three, empty} {
		if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []models.TaskState{models.TaskVerified, models.TaskVerified, models.TaskVerified, models.TaskAssigned, models.TaskPending} {
		e.humanTask("step "+itoa64(int64(i+1)), &three.ID, want)
	}
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			ctx := chrome(t)
			console := watchConsole(ctx)
			run(t, ctx, "viewport", atScreen(s))
			signIn(t, ctx, e, "lead", "/goals/"+itoa64(three.ID))
			run(t, ctx, "three of five", chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-progress"]`)), shot(t, "three-of-five"))
			checkFill(t, eval[progressBar](t, ctx, measureProgress+`('[data-testid="goal-progress"]')`), 0.6, "3 / 5")
			run(t, ctx, "empty goal", chromedp.Navigate(e.srv.URL+"/goals/"+itoa64(empty.ID)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-progress"]`)), shot(t, "empty"))
			checkFill(t, eval[progressBar](t, ctx, measureProgress+`('[data-testid="goal-progress"]')`), 0, "no tasks yet")
			run(t, ctx, "goal list", chromedp.Navigate(e.srv.URL+"/goals"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="progress"]`)), shot(t, "goals"))
			checkFill(t, eval[progressBar](t, ctx, measureProgress+`('[data-testid="goal-row-`+itoa64(three.ID)+`"]')`), 0.6, "3 / 5")
			checkFill(t, eval[progressBar](t, ctx, measureProgress+`('[data-testid="goal-row-`+itoa64(empty.ID)+`"]')`), 0, "no tasks yet")
			if v := console.csp(); len(v) > 0 {
				t.Errorf("CSP violations in the console:\n%s", strings.Join(v, "\n"))
			}
		})
	}
}

// checkFill checks a progress bar's fill against its track (share, within a pixel)
// and its label.
func checkFill(t *testing.T, p progressBar, share float64, label string) {
	t.Helper()
	if !p.Found || p.Track <= 0 {
		t.Fatalf("no progress bar with a track: %+v", p)
	}
	if d := p.Fill - share*p.Track; d > 1 || d < -1 {
		t.Errorf("the bar fills %.1f px of a %.1f px track, want %.0f%%", p.Fill, p.Track, share*100)
	}
	if !strings.Contains(p.Label, label) {
		t.Errorf("progress label %q, want %q", p.Label, label)
	}
}
