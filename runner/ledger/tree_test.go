package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestTaskCompleteNamesTheJudgedTree: the composer takes the tree from the judge's
// report, the message carries it, and a tree that is not an object id is refused.
func TestTaskCompleteNamesTheJudgedTree(t *testing.T) {
	tree := strings.Repeat("1", 40)
	task := &models.Task{ID: 9, Commit: strings.Repeat("2", 40)}
	e, err := Composer{}.TaskComplete(models.Completion{Task: task, Builder: &models.Agent{Name: "dev"}, Kind: models.KindRunner, Judge: &models.JudgeReport{Tree: tree}, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMessage(e.Message)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tree != tree || m.Commit != task.Commit {
		t.Fatalf("tree %q commit %q in %s", m.Tree, m.Commit, e.Message)
	}
	if !strings.Contains(string(e.Message), `"commit":"`+task.Commit+`","tree":"`+tree+`","ts"`) {
		t.Fatalf("fields out of order: %s", e.Message)
	}
	// No judge report (an advisory task): no tree.
	e, err = Composer{}.TaskComplete(models.Completion{Task: task, Kind: models.KindAdvisory, At: time.Now()})
	if err != nil || strings.Contains(string(e.Message), `"tree"`) {
		t.Fatalf("%s %v", e.Message, err)
	}
	for _, bad := range []string{"HEAD", strings.Repeat("A", 40), strings.Repeat("1", 39)} {
		if _, err := (TaskComplete{TaskID: 1, Contract: hashA, Tree: bad}).Entry(); err == nil {
			t.Errorf("tree %q accepted", bad)
		}
	}
}
