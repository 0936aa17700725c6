//go:build linux && (amd64 || arm64)

package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestTheJudgedTreeLands: what a verified task lands is exactly the tree its checks
// judged, whatever the worker's .gitignore says and whatever the code under test does
// while it is judged.
//   - A worker whose .gitignore hides the helper file its tests need: the candidate is
//     taken under the base's ignore rules, so the helper is judged and lands.
//   - A worker that puts the helper where the base ignores it (build/): the candidate
//     has no helper, the judge's view neither, and the task is blocked — not verified
//     with a commit that lacks what its tests needed.
//   - A worker whose code, run by the verify command, writes a file and rewrites a
//     tracked one mid-run: the writes land in the judge's view only; the landed tree is
//     the candidate's and the worktree keeps what the worker left.
//
// For every verified task the landed commit's tree equals the attempt's judged tree.
func TestTheJudgedTreeLands(t *testing.T) {
	h, repo := gitHarness(t, nil, map[string]string{
		".gitignore": "build/\n",
		"calc.txt":   "wrong\n",
	})
	wt := func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" }
	h.worker("hider", "hide", `echo right > calc.txt; echo ok > helper.txt; echo helper.txt >> .gitignore; echo TASK_COMPLETE`, wt)
	h.worker("builder", "build", `echo right > calc.txt; mkdir -p build; echo ok > build/helper.txt; echo TASK_COMPLETE`, wt)
	h.worker("rewriter", "rewrite", `echo right > calc.txt; printf 'open("late.txt", "w").write("late")\nopen("calc.txt", "w").write("poisoned")\n' > app.py; echo TASK_COMPLETE`, wt)
	contract := func(check string) contract.Contract {
		return contract.Contract{
			Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "check", Description: "the helper is there", Command: check}}},
		}
	}
	hidden := h.task("Hide the helper", "hide", contract(`grep -q right calc.txt && grep -q ok helper.txt`))
	ignored := h.task("Build the helper", "build", contract(`grep -q right calc.txt && grep -q ok build/helper.txt`))
	rewritten := h.task("Rewrite mid-run", "rewrite", contract(`grep -q right calc.txt && python3 app.py`))
	h.start()

	got := h.settled(hidden.ID, 2*time.Minute)
	if got.State != models.TaskVerified {
		t.Fatalf("a helper hidden by the worker's own .gitignore: %s, want verified (the base's rules decide); attempts %+v", got.State, h.attempts(hidden.ID))
	}
	if body := git(t, repo, "show", got.Commit+":helper.txt"); body != "ok" {
		t.Errorf("the landed commit lacks the judged helper.txt: %q", body)
	}
	assertLandedJudged(t, h, repo, got)

	got = h.settled(ignored.ID, 2*time.Minute)
	if got.State != models.TaskBlocked {
		t.Fatalf("a helper the tests need in a directory the base ignores: %s, want blocked; attempts %+v", got.State, h.attempts(ignored.ID))
	}

	got = h.settled(rewritten.ID, 2*time.Minute)
	if got.State != models.TaskVerified {
		t.Fatalf("the rewriter: %s; attempts %+v", got.State, h.attempts(rewritten.ID))
	}
	if body := git(t, repo, "show", got.Commit+":calc.txt"); body != "right" {
		t.Errorf("the landed calc.txt is %q: a write made while the tests ran reached the commit", body)
	}
	if files := git(t, repo, "ls-tree", "--name-only", got.Commit); strings.Contains(files, "late.txt") {
		t.Errorf("a file written while the tests ran landed: %s", files)
	}
	assertLandedJudged(t, h, repo, got)
}

// assertLandedJudged checks that task's landed commit has the tree its passing attempt
// judged.
func assertLandedJudged(t *testing.T, h *harness, repo string, task *models.Task) {
	t.Helper()
	atts := h.attempts(task.ID)
	last := atts[len(atts)-1]
	if last.Judge == nil || last.Judge.Tree == "" {
		t.Fatalf("task %d's passing attempt records no judged tree: %+v", task.ID, last.Judge)
	}
	if landed := git(t, repo, "rev-parse", task.Commit+"^{tree}"); landed != last.Judge.Tree {
		t.Fatalf("task %d landed tree %s, but its checks judged %s", task.ID, landed, last.Judge.Tree)
	}
}
