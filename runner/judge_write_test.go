package runner

import (
	"strings"
	"testing"
)

// TestJudgeWriteApartFromTheDataDir: a directory judged runs may write is refused when
// it is relative, the root, or holds or lies in the data dir (where the database and
// every workspace live); one beside it is taken.
func TestJudgeWriteApartFromTheDataDir(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	for _, bad := range []string{"reports", "/", h.root, h.cfg.Workspaces.Root(), h.cfg.Workspaces.Root() + "/tasks"} {
		cfg := h.cfg
		cfg.JudgeWrite = []string{bad}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "judge write path") {
			t.Errorf("judge write path %q: %v, want refused", bad, err)
		}
	}
	cfg := h.cfg
	cfg.JudgeWrite = []string{t.TempDir()}
	if _, err := New(cfg); err != nil {
		t.Errorf("a directory apart from the data dir: %v", err)
	}
}
