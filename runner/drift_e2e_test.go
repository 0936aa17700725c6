package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/drift"
)

// TestRecheckCatchesDrift: the runner fingerprints the output it verified; a recheck
// leaves alone a file the task never touched, catches a change to the output (the
// task stale, an inbox item, its verified goal back to pending_verify with
// goal.revoked), lets go of a change that was undone, and a lead's reopen of a stale
// task revokes its completion with reason drift.
func TestRecheckCatchesDrift(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "ok.sh"))
			g := &models.Goal{Title: "Docs"}
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
			task := h.task("write the docs", "developer", fileContract(), func(s *models.TaskSpec) { s.GoalID = &g.ID })
			h.start()
			done := h.wait(task.ID, models.TaskVerified)
			_, err := h.svc.Goals.VerifyGoal(h.ctx, h.boss, g.ID, "fine")
			must(t, err)

			fp := done.Fingerprint
			out := "out/" + itoa(task.ID) + ".md"
			if fp == nil || fp.Output != out || len(fp.Files) != 1 || fp.Files[0].Path != out || fp.Git {
				t.Fatalf("fingerprint %+v", fp)
			}
			rc := drift.NewRechecker(h.svc.Store(), h.svc.Tasks, 0, nil)
			recheck := func() drift.Result {
				t.Helper()
				res, err := rc.Task(h.ctx, h.boss, task.ID)
				must(t, err)
				return res
			}

			// A file the task never touched changes: not drift.
			must(t, os.WriteFile(filepath.Join(fp.Dir, "notes.txt"), []byte("scratch"), 0o644))
			if res := recheck(); len(res.Changed) != 0 || res.Unchecked || res.Gone {
				t.Fatalf("untouched file: %v", res)
			}
			// The verified output changes: drift.
			path := filepath.Join(fp.Dir, filepath.FromSlash(out))
			verified, err := os.ReadFile(path)
			must(t, err)
			must(t, os.WriteFile(path, append(verified, "edited later\n"...), 0o644))
			if res := recheck(); !slices.Equal(res.Changed, []string{out}) {
				t.Fatalf("changed output: %v", res)
			}
			checkDriftRecorded(t, h, g.ID, task.ID, out)
			// Recording the same drift again adds nothing.
			recheck()
			if n := h.openInbox(task.ID, models.InboxDrift); n != 1 {
				t.Fatalf("%d drift items after a second recheck", n)
			}

			// Undone: fresh again, the item resolved.
			must(t, os.WriteFile(path, verified, 0o644))
			if res := recheck(); !res.Fresh || len(res.Changed) != 0 {
				t.Fatalf("restored output: %v", res)
			}
			if n := h.openInbox(task.ID, models.InboxDrift); n != 0 {
				t.Fatalf("%d drift items once restored", n)
			}

			// Changed again, and the lead confirms by reopening: task.revoked, drift.
			must(t, os.Remove(path))
			if res := recheck(); !slices.Equal(res.Changed, []string{out}) {
				t.Fatalf("deleted output: %v", res)
			}
			_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActReopen, models.ActionInput{Reason: "the docs were overwritten"})
			must(t, err)
			entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{TaskID: task.ID})
			must(t, err)
			last := entries[len(entries)-1]
			if last.Type != models.LedgerTaskRevoked || !strings.Contains(string(last.Message), `"why":"drift"`) {
				t.Fatalf("after the reopen: %s %s", last.Type, last.Message)
			}
			h.wait(task.ID, models.TaskVerified) // the worker redoes it; a new fingerprint
			if again, _ := h.db.GetTask(h.ctx, task.ID); again.Drift != nil || again.Fingerprint == nil {
				t.Fatalf("re-verified: drift %+v fingerprint %+v", again.Drift, again.Fingerprint)
			}
		})
	}
}

func (h *harness) goalState(id int64) models.GoalState {
	h.t.Helper()
	g, err := h.db.GetGoal(h.ctx, id)
	must(h.t, err)
	return g.State
}

func (h *harness) openInbox(taskID int64, kind string) int {
	h.t.Helper()
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: taskID, Kind: kind})
	must(h.t, err)
	return len(items)
}

// goalLedgerTypes lists the types of the ledger entries about goal id and its tasks.
func (h *harness) goalLedgerTypes(id int64) []string {
	h.t.Helper()
	entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{GoalID: id})
	must(h.t, err)
	var types []string
	for _, e := range entries {
		types = append(types, e.Type)
	}
	return types
}

// TestRecheckOfAWorktreeTask: in a git worktree the fingerprint holds the blob ids of
// the files the verified commit changed (git's own, checked against `git hash-object`);
// a tracked file the task never touched may change, a changed one may not.
func TestRecheckOfAWorktreeTask(t *testing.T) {
	h, repo := gitHarness(t, nil, map[string]string{
		"calc.go":   "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"README.md": "# calc\n",
	})
	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main"
	})
	task := h.task("Fix Add", "developer", contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "fixed", Command: `grep -q 'a + b' calc.go`}}},
	})
	h.start()
	done := h.settled(task.ID, 2*time.Minute)
	fp := done.Fingerprint
	if done.State != models.TaskVerified || fp == nil || !fp.Git || len(fp.Files) != 1 || fp.Files[0].Path != "calc.go" {
		t.Fatalf("%s, fingerprint %+v", done.State, fp)
	}
	if want := git(t, repo, "rev-parse", done.Commit+":calc.go"); fp.Files[0].Hash != want {
		t.Fatalf("fingerprint blob %s, git says %s", fp.Files[0].Hash, want)
	}
	rc := drift.NewRechecker(h.svc.Store(), h.svc.Tasks, 0, nil)
	if res, err := rc.Task(h.ctx, h.boss, task.ID); err != nil || len(res.Changed) != 0 || res.Gone {
		t.Fatalf("unchanged worktree: %v %v", res, err)
	}
	must(t, os.WriteFile(filepath.Join(fp.Dir, "README.md"), []byte("# calc, edited\n"), 0o644))
	if res, err := rc.Task(h.ctx, h.boss, task.ID); err != nil || len(res.Changed) != 0 {
		t.Fatalf("untouched tracked file: %v %v", res, err)
	}
	must(t, os.WriteFile(filepath.Join(fp.Dir, "calc.go"), []byte("package calc\n"), 0o644))
	if res, err := rc.Task(h.ctx, h.boss, task.ID); err != nil || !slices.Equal(res.Changed, []string{"calc.go"}) {
		t.Fatalf("changed file: %v %v", res, err)
	}
}

// checkDriftRecorded checks what a recheck that found the output changed leaves
// behind: the task still verified but stale, its goal back to pending verification,
// one drift item, and the goal's verification revoked in the ledger. Split out of
// TestRecheckCatchesDrift to keep that test within the length limit.
func checkDriftRecorded(t *testing.T, h *harness, goalID, taskID int64, out string) {
	t.Helper()
	stale, err := h.db.GetTask(h.ctx, taskID)
	must(t, err)
	if stale.State != models.TaskVerified || stale.Drift == nil || !slices.Equal(stale.Drift.Changed, []string{out}) {
		t.Fatalf("stale task: %s %+v", stale.State, stale.Drift)
	}
	if gs := h.goalState(goalID); gs != models.GoalPendingVerify {
		t.Fatalf("goal of a stale task is %s", gs)
	}
	if n := h.openInbox(taskID, models.InboxDrift); n != 1 {
		t.Fatalf("%d drift items", n)
	}
	if types := h.goalLedgerTypes(goalID); !slices.Equal(types,
		[]string{models.LedgerTaskComplete, models.LedgerGoalVerified, models.LedgerGoalRevoked}) {
		t.Fatalf("goal's ledger: %v", types)
	}
}
