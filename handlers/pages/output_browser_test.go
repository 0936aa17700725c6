package pages_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/workspace"
)

// advisoryReport is the Markdown an advisory worker writes: a report longer than the
// first screen, with what a hostile worker could try against the person reading it.
func advisoryReport() string {
	var b strings.Builder
	b.WriteString("# Findings of the slow API\n\n")
	b.WriteString("<script>window.pwned = 'script'</script>\n\n")
	b.WriteString("See [the trace](javascript:window.pwned='link') and <img src=x onerror=\"window.pwned='img'\"> here.\n\n")
	b.WriteString("<div class=\"raw-html\" onclick=\"window.pwned='div'\">raw block</div>\n\n")
	b.WriteString("| endpoint | p99 |\n|---|---|\n| /orders | 2.1s |\n\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "- finding %d: the query plan scans the orders table\n", i)
	}
	b.WriteString("\nThe last word: **add an index on orders.customer_id**.\n")
	return b.String()
}

// TestAdvisoryOutputInTheBrowser is issue 20's item 4 end to end: a real worker, run by
// the runner pool, writes an advisory Markdown report; the inbox's advisory item and
// the task page show the report rendered (its script, javascript: link and raw HTML
// neutralised), its first screen with "show all" and a download link, and never the
// server's path; the download is the report, as an attachment.
func TestAdvisoryOutputInTheBrowser(t *testing.T) {
	db := storetest.Open(t, "sqlite")
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	e := newEnvOn(t, db, envOptions{deliverables: runner.NewDeliverableFiles(work)})
	e.team()
	ctx := context.Background()
	report := advisoryReport()
	src := filepath.Join(dir, "report.md")
	must(t, os.WriteFile(src, []byte(report), 0o644))
	must(t, e.svc.Agents.CreateAgent(ctx, models.System, &models.Agent{Name: "scribe", Kind: models.KindWorker, Roles: []string{"analyst"},
		Command: `cat > /dev/null; cp '` + src + `' "$COUNTERSIGN_OUTPUT_PATH" && echo TASK_COMPLETE`}, ""))
	tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Investigate the slow API", Brief: "Find out why the API is slow.", Role: "analyst",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MinLength: 100, DoneToken: "TASK_COMPLETE"},
			Verification: contract.Verification{Type: contract.VerifyAdvisory}}})
	must(t, err)

	ws, err := workspace.New(work)
	must(t, err)
	pool, err := runner.New(runner.Config{Service: e.svc, Workspaces: ws, RunnerID: "e2e", APIURL: e.srv.URL,
		Lease: 5 * time.Second, Poll: 200 * time.Millisecond, Grace: 2 * time.Second, KillGrace: 200 * time.Millisecond, Log: handlertest.DiscardLog()})
	must(t, err)
	must(t, pool.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pool.Stop(sctx)
	})
	waitFor(t, "the advisory task to pass", func() bool { return e.state(tk.ID) == models.TaskVerified })
	items, err := e.db.ListInbox(ctx, models.InboxFilter{TaskID: tk.ID, Kind: models.InboxAdvisory})
	must(t, err)
	if len(items) != 1 {
		t.Fatalf("%d advisory items", len(items))
	}
	// The server's layout: the data dir and the workspace root, resolved.
	realWork, err := filepath.EvalSymlinks(work)
	must(t, err)
	leaks := []string{dir, work, realWork}

	bctx := chrome(t)
	signIn(t, bctx, e, "exec", "/inbox")
	checkOutput(t, bctx, "inbox-output", "inbox", leaks)
	checkDownload(t, bctx, fmt.Sprintf("/tasks/%d/output", tk.ID), fmt.Sprintf("%d.md", tk.ID), report)

	run(t, bctx, "open the task page", chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", e.srv.URL, tk.ID)))
	checkOutput(t, bctx, "task-output", "task", leaks)
	facts := text(t, bctx, `[data-testid="task-facts"]`)
	if strings.Contains(facts, "Attempts used") || !strings.Contains(facts, "Attempts made") || !strings.Contains(facts, "Failed attempts charged") {
		t.Errorf("the task's facts do not say what their numbers count:\n%s", facts)
	}
}

// checkOutput checks the output block with test ids prefixed by id on the page the
// browser shows: rendered Markdown, nothing executable, the first screen only until
// "show all" opens the rest, a download link, and none of leaks on the page.
func checkOutput(t *testing.T, ctx context.Context, id, name string, leaks []string) {
	t.Helper()
	sel := func(s string) string { return `[data-testid="` + id + s + `"]` }
	var preview, page string
	var pwned any
	var scripts, badLinks, rawHTML int
	var allOpen bool
	run(t, ctx, name+": the output is shown",
		chromedp.WaitVisible(chromedp.CSS(sel("-preview"))),
		read(chromedp.InnerHTML(chromedp.CSS(sel("-preview"))), &preview),
		read(chromedp.OuterHTML(chromedp.CSS("html")), &page),
		read(chromedp.Evaluate[any](`window.pwned === undefined ? null : window.pwned`), &pwned),
		read(chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="`+id+`"] script').length`), &scripts),
		read(chromedp.Evaluate[int](`Array.from(document.querySelectorAll('[data-testid="`+id+`"] [href], [data-testid="`+id+`"] [src]')).filter(el => /^\s*(javascript|vbscript|data):/i.test(el.getAttribute('href') || el.getAttribute('src') || '')).length`), &badLinks),
		read(chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="`+id+`"] .raw-html, [data-testid="`+id+`"] [onclick], [data-testid="`+id+`"] [onerror]').length`), &rawHTML),
		read(chromedp.Evaluate[bool](`document.querySelector('[data-testid="`+id+`-all"]').open`), &allOpen),
		shot(t, name+"-output"),
	)
	if !strings.Contains(preview, "<h1>Findings of the slow API</h1>") || !strings.Contains(preview, "<table>") {
		t.Errorf("%s: the Markdown is not rendered:\n%s", name, preview)
	}
	if pwned != nil || scripts != 0 || badLinks != 0 || rawHTML != 0 {
		t.Errorf("%s: not neutralised: pwned %v, %d scripts, %d javascript:/data: links, %d raw HTML elements", name, pwned, scripts, badLinks, rawHTML)
	}
	if strings.Contains(preview, "The last word") || allOpen {
		t.Errorf("%s: the first screen is the whole report (show all open: %v)", name, allOpen)
	}
	for _, l := range leaks {
		if strings.Contains(page, l) {
			t.Errorf("%s: the page shows the server path %s", name, l)
		}
	}
	if href := attr(t, ctx, sel("-download"), "href"); !strings.HasSuffix(href, "/output") {
		t.Errorf("%s: download link %q", name, href)
	}
	var full string
	run(t, ctx, name+": show all",
		chromedp.Click(chromedp.CSS(sel("-show-all"))),
		chromedp.WaitVisible(chromedp.CSS(sel("-rest"))),
		read(chromedp.Text(chromedp.CSS(sel("-rest"))), &full),
		chromedp.ScrollIntoView(chromedp.CSS(sel("-download"))),
		shot(t, name+"-show-all"),
	)
	if !strings.Contains(full, "The last word: add an index on orders.customer_id.") || !strings.Contains(full, "finding 60") ||
		strings.Contains(full, "Findings of the slow API") {
		t.Errorf("%s: show all is not the rest of the report:\n%s", name, full)
	}
}

// attr reads attribute name of the element sel.
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	var v chromedp.AttributeResult
	run(t, ctx, "read "+sel+" "+name, read(chromedp.AttributeValue(chromedp.CSS(sel), name), &v))
	return v.Value
}

// checkDownload fetches path in the signed-in browser and checks it is the report,
// as an attachment named file.
func checkDownload(t *testing.T, ctx context.Context, path, file, report string) {
	t.Helper()
	type fetched struct {
		Status      int    `json:"status"`
		Disposition string `json:"disposition"`
		Body        string `json:"body"`
	}
	var got fetched
	run(t, ctx, "download "+path, read(chromedp.Evaluate[fetched](`fetch('`+path+`').then(async r => ({status: r.status, disposition: r.headers.get('Content-Disposition') || '', body: await r.text()}))`,
		chromedp.EvalAwaitPromise), &got))
	if got.Status != 200 || got.Disposition != `attachment; filename="`+file+`"` || got.Body != report {
		t.Errorf("download %s: status %d, disposition %q, body %d bytes (want %d)", path, got.Status, got.Disposition, len(got.Body), len(report))
	}
}
