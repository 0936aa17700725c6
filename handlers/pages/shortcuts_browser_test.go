package pages_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/countersign/countersign/models"
)

// press types keys as a person's key presses do: one keyDown carrying the text and
// one keyUp per key, so that a keydown handler that calls preventDefault keeps the
// character from being typed (chromedp.KeyEvent sends the text as a separate char
// event, which no handler can cancel).
func press(keys string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, r := range keys {
			var down, up *input.DispatchKeyEventParams
			for _, k := range kb.Encode(r) {
				switch k.Type {
				case input.DispatchKeyEventTypeKeyDown:
					down = k
				case input.DispatchKeyEventTypeKeyUp:
					up = k
				case input.DispatchKeyEventTypeChar:
					down.Text, down.UnmodifiedText = k.Text, k.UnmodifiedText
				}
			}
			for _, k := range []*input.DispatchKeyEventParams{down, up} {
				if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, *k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// waitPath waits until the page at path has loaded, or fails with where it is.
func waitPath(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	js := `location.pathname === "` + path + `" && document.readyState === "complete"`
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		// While the page navigates its context goes away: an error here is a retry.
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
	}
	t.Fatalf("waiting for %s: at %s", path, eval[string](t, ctx, `location.pathname`))
}

// TestBrowserShortcuts, in Chromium under the real CSP: "?" shows the list of
// shortcuts and hides it again, "/" focuses the search box (and a key typed there
// is text, not a shortcut), j and k move a visible selection over the task list and
// Enter opens the selected task, "g i" goes to the inbox, and the search box finds
// a task by its title.
func TestBrowserShortcuts(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	var ids []int64
	for _, title := range []string{"Paint the fence", "Mend the gate", "Water the roses"} {
		tk, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: title, Role: "developer"})
		must(t, err)
		ids = append(ids, tk.ID)
	}
	ctx := chrome(t)
	signIn(t, ctx, e, "lead", "/tasks")
	run(t, ctx, "task list", chromedp.WaitVisible(byTestID("tasks-table")))

	run(t, ctx, "? opens the list", press("?"), chromedp.WaitVisible(byTestID("shortcuts")),
		chromedp.WaitVisible(byTestID("shortcut-inbox")), shot(t, "shortcuts"))
	if got := text(t, ctx, `[data-testid="shortcut-search"]`); !strings.Contains(got, "/") || !strings.Contains(got, "Search") {
		t.Errorf("the search shortcut reads %q", got)
	}
	run(t, ctx, "? closes the list", press("?"), chromedp.WaitNotVisible(byTestID("shortcuts")))

	run(t, ctx, "/ focuses search", press("/"))
	if id := eval[string](t, ctx, `document.activeElement.id`); id != "nav-search" {
		t.Fatalf("after /, the focus is on %q, want nav-search", id)
	}
	run(t, ctx, "type j in the box", press("j"))
	if v := eval[string](t, ctx, `document.getElementById("nav-search").value`); v != "j" {
		t.Errorf("the search box holds %q after typing j, want \"j\"", v)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(".kbd-selected").length`); n != 0 {
		t.Errorf("j typed in the search box selected %d items", n)
	}
	run(t, ctx, "Esc leaves the box", press(kb.Escape))

	selected := func() string {
		t.Helper()
		return eval[string](t, ctx, `(document.querySelector(".kbd-selected") || {dataset: {}}).dataset.testid || ""`)
	}
	row := func(i int) string { return "task-row-" + itoa64(ids[i]) }
	run(t, ctx, "j", press("j"))
	if got := selected(); got != row(2) {
		t.Fatalf("after j, %q is selected, want the first row %s", got, row(2))
	}
	run(t, ctx, "j again", press("j"), shot(t, "selected"))
	if got := selected(); got != row(1) {
		t.Fatalf("after j j, %q is selected, want %s", got, row(1))
	}
	if outline := eval[string](t, ctx, `getComputedStyle(document.querySelector(".kbd-selected")).outlineStyle`); outline == "none" {
		t.Error("the selection is not visible (no outline)")
	}
	run(t, ctx, "k", press("k"))
	if got := selected(); got != row(2) {
		t.Fatalf("after j j k, %q is selected, want %s", got, row(2))
	}
	run(t, ctx, "Enter opens it", press(kb.Enter))
	waitPath(t, ctx, "/tasks/"+itoa64(ids[2]))

	run(t, ctx, "g i", press("g"), press("i"))
	waitPath(t, ctx, "/inbox")

	run(t, ctx, "search from the nav", press("/"), chromedp.SendKeys(byTestID("nav-search"), "gate"+kb.Enter),
		chromedp.WaitVisible(byTestID("search-tasks-"+itoa64(ids[1]))), shot(t, "search"))

	// a: the selected queue item's primary action. A goal to verify asks for notes,
	// so the key puts the focus in that item's field.
	g := e.pendingGoal("Ship the garden")
	item := "queue-item-goal_verify-" + itoa64(g.ID)
	run(t, ctx, "the queue", chromedp.Navigate(e.srv.URL+"/queue"), chromedp.WaitVisible(byTestID(item)))
	for i := 0; i < 10 && selected() != item; i++ {
		run(t, ctx, "j to the goal", press("j"))
	}
	run(t, ctx, "a", press("a"), shot(t, "primary"))
	if in := eval[bool](t, ctx, `!!document.activeElement.closest(".kbd-selected [data-primary-action]")`); !in {
		where := eval[string](t, ctx, `location.pathname + " " + document.activeElement.outerHTML.slice(0, 120)`)
		t.Fatalf("after j a on the queue the focus is not in the item's primary action: %s", where)
	}
}
