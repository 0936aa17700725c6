package runner

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestRelativeTo: the workspace dir in a diagnosis becomes relative, and only it.
func TestRelativeTo(t *testing.T) {
	dir := "/data/work/tasks/1"
	for in, want := range map[string]string{
		"output file missing at /data/work/tasks/1/1/guide.md":       "output file missing at 1/guide.md",
		"cd /data/work/tasks/1 failed; /data/work/tasks/1: gone":     "cd . failed; .: gone",
		"/data/work/tasks/10/x.md and /data/work/tasks/1.bak/y stay": "/data/work/tasks/10/x.md and /data/work/tasks/1.bak/y stay",
		"nothing to do": "nothing to do",
	} {
		if got := relativeTo(dir, in); got != want {
			t.Errorf("relativeTo(%q) = %q, want %q", in, got, want)
		}
	}
	if got := relativeTo("", "/a/b"); got != "/a/b" {
		t.Errorf("empty dir changed %q", got)
	}
}

// diagnosesAreTidy fails when a diagnosis of task id (its attempts, their checks, the
// blocked inbox item's title) names the harness's data dir, or names its stage twice
// ("contradiction: contradiction: …").
func diagnosesAreTidy(t *testing.T, h *harness, id int64, stage string) {
	t.Helper()
	for _, a := range h.attempts(id) {
		texts := []string{a.Diagnosis}
		for _, c := range a.Checks {
			texts = append(texts, c.Diagnosis)
		}
		for _, s := range texts {
			if strings.Contains(s, h.root) {
				t.Errorf("attempt %d: diagnosis names the server path %s: %q", a.Number, h.root, s)
			}
			if strings.HasPrefix(strings.ToLower(s), stage+":") {
				t.Errorf("attempt %d: diagnosis starts with its stage %q: %q", a.Number, stage, s)
			}
		}
	}
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: id, Kind: models.InboxBlocked})
	must(t, err)
	for _, it := range items {
		if n := strings.Count(it.Title, stage+":"); n > 1 {
			t.Errorf("inbox title names the stage %d times: %q", n, it.Title)
		}
		if strings.Contains(it.Title, h.root) {
			t.Errorf("inbox title names the server path: %q", it.Title)
		}
	}
}
