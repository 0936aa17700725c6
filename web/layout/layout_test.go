package layout

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/static"
)

func TestPage(t *testing.T) {
	var buf bytes.Buffer
	meta := PageMeta{
		Title: "<script>x</script>", Active: NavInbox, CSRF: "tok",
		Agent:      &NavAgent{Name: "alice", Roles: []string{"lead", "exec"}},
		InboxCount: 3, LastEventID: 42, Flash: "Saved", FlashKind: "success",
		Version: "v1.2.3", LiveRefresh: "task:12",
	}
	ctx := templ.WithChildren(context.Background(), templ.Raw("<p>content</p>"))
	if err := Page(meta).Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		`<html lang="en">`,
		`name="viewport"`,
		`<title>&lt;script&gt;x&lt;/script&gt; · Countersign</title>`,
		`href="` + static.Path("app.css") + `"`,
		`src="` + static.Path("live.js") + `"`,
		`href="` + static.Path("a11y.css") + `"`,
		`src="` + static.Path("a11y.js") + `"`,
		`data-last-event="42"`,
		`data-live-refresh="task:12"`,
		`href="/inbox" data-testid="nav-inbox" aria-current="page"`,
		`data-testid="nav-inbox-count"`,
		`action="/logout"`,
		`<input type="hidden" name="csrf" value="tok">`,
		"lead, exec",
		"Saved",
		"v1.2.3",
		"<p>content</p>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page misses %q", want)
		}
	}
	if strings.Contains(got, "<script>x") {
		t.Errorf("title not escaped")
	}

	buf.Reset()
	if err := Bare(PageMeta{Title: "Sign in"}).Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "<title>Sign in · Countersign</title>") || strings.Contains(got, "nav-logout") {
		t.Errorf("bare: %s", got)
	}
}
