//go:build linux && (amd64 || arm64)

package runner

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
)

// TestVerifiedWorkLandsOnTaskBranches: a worktree task works on its own branch from
// the agent's target branch; once verified, what the worker left is a commit there,
// authored by the worker agent, with the task, attempt and verifier in trailers; it is
// the task's commit and the ledger's task.complete names it. The next step of the
// chain starts from that commit, so its worker sees the first step's change.
func TestVerifiedWorkLandsOnTaskBranches(t *testing.T) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	repo := filepath.Join(h.root, "repo")
	writeFiles(t, repo, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	gitInit(t, repo)
	git(t, repo, "branch", "-M", "main")
	// A branch of the user's that must stay where it is.
	git(t, repo, "branch", "other")

	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main"
	})
	// The second step's worker fails unless the first step's change is in its worktree.
	h.worker("documenter", "writer", `grep -q 'a + b' calc.go || { echo "the fix is not here"; exit 1; }; printf '// Add adds.\n' >> calc.go; echo TASK_COMPLETE`,
		func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" })
	contract := func(check string) models.Contract {
		return models.Contract{
			Completion: models.Completion{Type: models.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: models.Verification{Type: models.VerifyVerifiable,
				Criteria: []models.Criterion{{Activity: "check", Description: "the change is there", Command: check}}},
		}
	}
	fix := h.task("Fix Add in calc.go", "developer", contract(`grep -q 'a + b' calc.go`))
	doc := h.task("Document Add", "writer", contract(`grep -q 'Add adds' calc.go`), func(s *models.TaskSpec) { s.DependsOn = []int64{fix.ID} })
	h.start()

	first := h.settled(fix.ID, 2*time.Minute)
	if first.State != models.TaskVerified {
		t.Fatalf("the fix: %s; attempts %+v", first.State, h.attempts(fix.ID))
	}
	if want := "countersign/task-" + itoa(fix.ID); first.Branch != want || len(first.Base) != 40 || len(first.Commit) != 40 {
		t.Fatalf("the fix's branch %q base %q commit %q, want branch %s and both commits", first.Branch, first.Base, first.Commit, want)
	}
	if tip := git(t, repo, "rev-parse", first.Branch); tip != first.Commit {
		t.Fatalf("the branch's tip is %s, the task's commit %s", tip, first.Commit)
	}
	if base := git(t, repo, "rev-parse", "main"); base != first.Base {
		t.Fatalf("the fix was based on %s, main is at %s (main must not move)", first.Base, base)
	}
	trailers := git(t, repo, "log", "-1", "--format=%(trailers)%an", first.Commit)
	for _, want := range []string{"Countersign-Task: " + itoa(fix.ID), "Countersign-Attempt: 1", "Countersign-Verified-By: runner", "fixer"} {
		if !strings.Contains(trailers, want) {
			t.Errorf("the verified commit lacks %q:\n%s", want, trailers)
		}
	}
	if body := git(t, repo, "show", first.Commit+":calc.go"); !strings.Contains(body, "a + b") {
		t.Errorf("the verified commit does not hold the fix:\n%s", body)
	}
	entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{})
	must(t, err)
	named := false
	for _, e := range entries {
		if e.TaskID != nil && *e.TaskID == fix.ID && strings.Contains(string(e.Message), `"commit":"`+first.Commit+`"`) {
			named = true
		}
	}
	if !named {
		t.Errorf("no task.complete names the verified commit %s", first.Commit)
	}

	second := h.settled(doc.ID, 2*time.Minute)
	if second.State != models.TaskVerified {
		t.Fatalf("the second step: %s; attempts %+v", second.State, h.attempts(doc.ID))
	}
	if second.Base != first.Commit {
		t.Fatalf("the second step started from %s, want the first step's verified commit %s", second.Base, first.Commit)
	}
	if parents := git(t, repo, "rev-list", "--count", first.Commit+".."+second.Commit); parents != "1" {
		t.Errorf("the second step's commit is %s commits past the first's, want 1", parents)
	}
	if other := git(t, repo, "rev-parse", "other"); other != first.Base {
		t.Errorf("a branch of the user's moved: other is at %s", other)
	}
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
