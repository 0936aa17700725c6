package pages_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// confirmDialogs answers the confirm() dialogs of ctx's tab with *accept at the time
// and records their messages.
type confirmDialogs struct {
	accept atomic.Bool
	mu     sync.Mutex
	asked  []string
}

func (d *confirmDialogs) messages() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

func answerDialogs(ctx context.Context) *confirmDialogs {
	d := &confirmDialogs{}
	opening := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range opening {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.asked = append(d.asked, ev.Message)
			d.mu.Unlock()
			accept := d.accept.Load()
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: accept})
					return err
				}))
			}()
		}
	}()
	return d
}

// TestBrowserQueueLive: a lead watching "Waiting on you" sees a goal appear, and the
// nav's count go up, when the goal becomes pending_verify, without a reload.
func TestBrowserQueueLive(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	g := &models.Goal{Title: "Live goal"}
	if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
		t.Fatal(err)
	}
	tk := e.humanTask("Last task of the live goal", &g.ID, models.TaskCompleted)
	ctx := chrome(t)
	signIn(t, ctx, e, "lead", "/queue")
	run(t, ctx, "watch the queue",
		chromedp.WaitVisible(chromedp.CSS(`[data-live-status][data-state="live"]`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[int](`window.__noReload = 1`)(ctx, tg)
			return err
		}),
		shot(t, "before"),
	)
	before := evalJS[string](t, ctx, `document.querySelector('[data-testid="nav-queue-count"]').textContent`)
	if before != "0" {
		t.Fatalf("nav count before: %q", before)
	}
	e.act("tester", tk.ID, models.ActVerify, models.ActionInput{Notes: "works"}) // the goal is pending_verify now
	waitJS(t, ctx, "the goal in the queue", `!!document.querySelector('[data-testid="queue-item-goal_verify-`+itoa64(g.ID)+`"]')`)
	waitJS(t, ctx, "the nav count", `(function(){var c=document.querySelector('[data-testid="nav-queue-count"]');return !c.hidden && c.textContent==="1"})()`)
	run(t, ctx, "after", shot(t, "after"))
	if evalJS[int](t, ctx, `window.__noReload || 0`) != 1 {
		t.Fatal("the page reloaded instead of updating live")
	}
}

// TestBrowserConfirmCancel: Cancel task asks first; declined, nothing is posted;
// accepted, the task is cancelled.
func TestBrowserConfirmCancel(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	bt := e.blockedTask("Confirm before cancelling", nil)
	ctx := chrome(t)
	dialogs := answerDialogs(ctx)
	signIn(t, ctx, e, "exec", "/tasks/"+itoa64(bt.ID))
	run(t, ctx, "decline", chromedp.Click(chromedp.CSS(`[data-testid="action-cancel"]`)))
	deadline := time.Now().Add(5 * time.Second)
	for len(dialogs.messages()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a submission, had it gone out, lands by now
	if got := dialogs.messages(); len(got) != 1 || got[0] != components.ConfirmCancelTask {
		t.Fatalf("dialogs %q, want the cancel question once", got)
	}
	if s := e.state(bt.ID); s != models.TaskBlocked {
		t.Fatalf("declined, the task is %s", s)
	}
	dialogs.accept.Store(true)
	run(t, ctx, "accept",
		chromedp.Click(chromedp.CSS(`[data-testid="action-cancel"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "cancelled"),
	)
	if s := e.state(bt.ID); s != models.TaskCancelled {
		t.Fatalf("accepted, the task is %s", s)
	}
}
