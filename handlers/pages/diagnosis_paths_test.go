package pages

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// TestTidyDiagnosis: the stage prefix goes, a workspace or workdir path becomes
// relative, any other absolute path keeps its last part, a URL stays.
func TestTidyDiagnosis(t *testing.T) {
	dir := &directory{list: []models.Agent{{Name: "w", Workdir: "/home/ops/site/"}}}
	for in, want := range map[string]string{
		"contradiction: contradiction: it says done":               "it says done",
		"output file missing at /srv/data/work/tasks/7/7/guide.md": "output file missing at 7/guide.md",
		"in /data/worktrees/3/pkg/a_test.go:12: boom":              "in pkg/a_test.go:12: boom",
		"sh: /home/ops/site/bin/run.sh: not found":                 "sh: bin/run.sh: not found",
		`exec "/opt/agents/bin/run.sh" failed (/usr/lib/x.so)`:     `exec "…/run.sh" failed (…/x.so)`,
		"see https://example.com/a/b/c and C:/x":                   "see https://example.com/a/b/c and C:/x",
	} {
		if got := dir.tidyDiagnosis(models.StageContradiction, in); got != want {
			t.Errorf("tidyDiagnosis(%q) = %q, want %q", in, got, want)
		}
	}
}
