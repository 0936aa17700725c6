package pages_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner"
)

// TestTaskPageShowsTheDeliverable: a verified task without a git workspace shows the
// files its verified attempt kept, each a download behind the session that answers
// the kept bytes as an attachment; a path the manifest does not list is not served,
// and the page never shows the server's data dir.
func TestTaskPageShowsTheDeliverable(t *testing.T) {
	root := t.TempDir()
	e := newEnvWith(t, "sqlite", envOptions{deliverables: runner.NewDeliverableFiles(root)})
	e.team()
	ctx := e.ctx()
	tk := e.humanTask("Write the findings", nil, models.TaskVerified)
	body := "# Findings\n\n<script>alert(1)</script>\n"
	kept := filepath.Join(root, "meta", itoa64(tk.ID), "deliverable", "1")
	must(t, os.MkdirAll(filepath.Join(kept, "out"), 0o750))
	must(t, os.WriteFile(filepath.Join(kept, "out", "findings.md"), []byte(body), 0o640))
	must(t, os.WriteFile(filepath.Join(kept, "secret.txt"), []byte("not listed"), 0o640))
	sum := sha256.Sum256([]byte(body))
	now := time.Now().UTC()
	must(t, e.db.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: e.agents["dev"].ID, RunnerID: "r",
		Outcome: models.OutcomePassed, StartedAt: now, FinishedAt: &now,
		Deliverable: &models.Deliverable{Files: []models.DeliverableFile{{Path: "out/findings.md", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}}}}))

	b := e.browser().login("exec")
	pg := b.get("/tasks/" + itoa64(tk.ID))
	for _, want := range []string{`data-testid="deliverable"`, `data-testid="deliverable-file"`, "out/findings.md", hex.EncodeToString(sum[:])[:12]} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the task page lacks %q", want)
		}
	}
	if strings.Contains(pg.Body, root) {
		t.Fatal("the task page shows the server's data dir")
	}
	dl := b.get("/tasks/" + itoa64(tk.ID) + "/deliverable/files/out/findings.md")
	if dl.Status != http.StatusOK || dl.Body != body || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") ||
		dl.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("the download: %d %q %v", dl.Status, dl.Body, dl.Header)
	}
	if r := b.get("/tasks/" + itoa64(tk.ID) + "/deliverable/files/secret.txt"); r.Status != http.StatusNotFound || strings.Contains(r.Body, "not listed") {
		t.Fatalf("a kept file the manifest does not list: %d %q", r.Status, r.Body)
	}
	if r := b.get("/tasks/" + itoa64(tk.ID) + "/deliverable.tar.gz"); r.Status != http.StatusOK || !strings.HasPrefix(r.Body, "\x1f\x8b") {
		t.Fatalf("the archive: %d", r.Status)
	}
	if r := e.browser().get("/tasks/" + itoa64(tk.ID) + "/deliverable/files/out/findings.md"); r.Status == http.StatusOK {
		t.Fatal("a download without a session answered 200")
	}
}
