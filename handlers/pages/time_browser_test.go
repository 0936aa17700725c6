package pages_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// inZone makes the tab's JavaScript see the time zone id, as a viewer there would.
func inZone(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: id})
		return err
	})
}

// timeOf reads the text, title and datetime of the first <time> matching sel.
func timeOf(t *testing.T, ctx context.Context, sel string) (text, title, datetime string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(function(){const el=document.querySelector(`+
		"`"+sel+"`"+`);return el?[el.textContent,el.title,el.getAttribute("datetime")]:[];})()`))
	if err != nil || len(got) != 3 {
		t.Fatalf("read the time %s: %v %v", sel, got, err)
	}
	return got[0], got[1], got[2]
}

// TestTimesTickInTheViewersZone: the inbox's "waiting …" ticks as the viewer watches,
// and its title, like the overview feed's times, holds the date and time in the
// viewer's time zone (Tokyo, whatever the server's is).
func TestTimesTickInTheViewersZone(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	e.blockedTask("Ship the release notes", nil)
	ctx := chrome(t)
	run(t, ctx, "the viewer is in Tokyo", inZone("Asia/Tokyo"))
	signIn(t, ctx, e, "exec", "/inbox")
	const age = `[data-testid="inbox-age"] time`
	run(t, ctx, "the inbox", chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-age"]`)))
	first, title, dt := timeOf(t, ctx, age)
	time.Sleep(2200 * time.Millisecond)
	second, _, _ := timeOf(t, ctx, age)
	if !strings.HasPrefix(first, "waiting ") || first == second {
		t.Errorf("the wait does not tick: %q, then %q two seconds later", first, second)
	}
	at, err := time.Parse(time.RFC3339, dt)
	if err != nil {
		t.Fatalf("datetime %q: %v", dt, err)
	}
	tokyo := at.In(time.FixedZone("JST", 9*3600)).Format("2006-01-02 15:04:05")
	if !strings.Contains(title, tokyo) || !strings.Contains(title, "Asia/Tokyo") {
		t.Errorf("title %q, want the Tokyo time %s with its zone", title, tokyo)
	}
	run(t, ctx, "the overview", chromedp.Navigate(e.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="live-feed"] time`)), shot(t, "overview"))
	text, title, _ := timeOf(t, ctx, `[data-testid="live-feed"] time`)
	if !strings.HasSuffix(text, " ago") || !strings.Contains(title, "Asia/Tokyo") || !strings.Contains(title, time.Now().UTC().Format("2006-")) {
		t.Errorf("the overview's feed time says %q (title %q), want how long ago, the date and the zone on hover", text, title)
	}
}
