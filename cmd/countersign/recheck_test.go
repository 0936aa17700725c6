package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestCLIRecheck: `countersign recheck` says a verified task whose output is as it was
// verified is fine and exits 0; once the output changed it says the task is stale,
// marks it, and exits non-zero; it refuses --task with --goal.
func TestCLIRecheck(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, dir, "", "migrate")
	ctx := context.Background()
	db := openData(t, dir)
	svc := newService(db)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	out := []byte("the verified report\n")
	if err := os.WriteFile(filepath.Join(ws, "report.md"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Report", Role: "developer", Brief: "b"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(out)
	task.State, task.Fingerprint = models.TaskVerified, &models.Fingerprint{Dir: ws, Output: "report.md", At: time.Now(),
		Files: []models.FingerprintFile{{Path: "report.md", Hash: hex.EncodeToString(sum[:])}}}
	if err := db.UpdateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if got := mustCLI(t, dir, "", "recheck"); !strings.Contains(got, "as verified") || !strings.Contains(got, "1 task(s) rechecked, 0 stale") {
		t.Fatalf("recheck of unchanged work:\n%s", got)
	}
	if err := os.WriteFile(filepath.Join(ws, "report.md"), []byte("rewritten\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := cli(t, dir, "", "recheck", "--task", strconv.FormatInt(task.ID, 10))
	if err == nil || !strings.Contains(got, "STALE, changed since verification: report.md") {
		t.Fatalf("recheck of changed work: %v\n%s", err, got)
	}
	after, err := openData(t, dir).GetTask(ctx, task.ID)
	if err != nil || after.Drift == nil || after.Drift.Changed[0] != "report.md" {
		t.Fatalf("after the recheck: %+v %v", after, err)
	}
	if got, err := cli(t, dir, "", "recheck", "--task", "1", "--goal", "1"); err == nil || !strings.Contains(got, "not both") {
		t.Fatalf("--task with --goal: %v %s", err, got)
	}
}
