package pages_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner"
)

// inboxLoadItems and inboxLoadOutput size the inbox TestInboxRenderTime measures:
// twenty advisory items, each with a 200 KiB Markdown output in its workspace.
const (
	inboxLoadItems  = 20
	inboxLoadOutput = 200 << 10
)

// TestInboxRenderTime renders an inbox of inboxLoadItems advisory items, each with an
// inboxLoadOutput Markdown output, and logs how long GET /inbox takes (the first
// render, then the best of three more) and how large the page is. The inbox shows
// each output's first screen, "show all" and the download link, but not the whole
// of every output: the page stays far smaller than the outputs.
func TestInboxRenderTime(t *testing.T) {
	// Kept copies configured, as a server runs: the inbox then lists each item's
	// attempts (these tasks kept none, so the workspace's file is shown).
	e := newEnvWith(t, "sqlite", envOptions{deliverables: runner.NewDeliverableFiles(t.TempDir())})
	e.team()
	ctx := e.ctx()
	for i := range inboxLoadItems {
		tk := e.humanTask(fmt.Sprintf("Investigate slow endpoint %d", i), nil, models.TaskVerified)
		var b strings.Builder
		fmt.Fprintf(&b, "# Findings %d\n\n", i)
		for n := 0; b.Len() < inboxLoadOutput-100; n++ {
			fmt.Fprintf(&b, "- finding %d: the query plan scans the orders table, **add an index**\n", n)
		}
		fmt.Fprintf(&b, "\nEND-OF-REPORT-%d\n", i)
		out := []byte(b.String())
		ws := t.TempDir()
		must(t, os.WriteFile(filepath.Join(ws, "findings.md"), out, 0o644))
		sum := sha256.Sum256(out)
		stored, err := e.db.GetTask(ctx, tk.ID)
		must(t, err)
		stored.Fingerprint = &models.Fingerprint{Dir: ws, Output: "findings.md", At: time.Now(),
			Files: []models.FingerprintFile{{Path: "findings.md", Hash: hex.EncodeToString(sum[:])}}}
		must(t, e.db.UpdateTask(ctx, stored))
		payload, _ := json.Marshal(map[string]any{"task_id": tk.ID, "summary": "advisory: attempt 1 finished cleanly"})
		must(t, e.db.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxAdvisory, TaskID: tk.ID, Payload: payload,
			CreatedAt: time.Now(), Title: fmt.Sprintf("Advisory output of task %d to look at", tk.ID)}))
	}
	ex := e.browser().login("exec")
	render := func() (time.Duration, page) {
		start := time.Now()
		pg := ex.get("/inbox")
		return time.Since(start), pg
	}
	first, pg := render()
	best := time.Duration(1 << 62)
	for range 3 {
		d, _ := render()
		best = min(best, d)
	}
	t.Logf("GET /inbox with %d advisory items of %d KiB each: first %v, best of 3 more %v, page %d KiB",
		inboxLoadItems, inboxLoadOutput>>10, first.Round(time.Millisecond), best.Round(time.Millisecond), len(pg.Body)>>10)
	if pg.Status != http.StatusOK {
		t.Fatalf("GET /inbox: %d", pg.Status)
	}
	for _, want := range []string{`data-testid="inbox-output-preview"`, `data-testid="inbox-output-show-all"`, `data-testid="inbox-output-download"`, "<h1>Findings 0</h1>"} {
		if n := strings.Count(pg.Body, want); n != inboxLoadItems && !strings.HasPrefix(want, "<h1>") || n == 0 {
			t.Errorf("the inbox shows %q %d times, want one per item", want, n)
		}
	}
	if strings.Contains(pg.Body, "END-OF-REPORT-") {
		t.Error("the inbox holds the whole of an output, not its first part")
	}
	if max := inboxLoadItems * inboxLoadOutput / 4; len(pg.Body) > max {
		t.Errorf("the inbox page is %d KiB, over %d KiB for %d items", len(pg.Body)>>10, max>>10, inboxLoadItems)
	}
}
