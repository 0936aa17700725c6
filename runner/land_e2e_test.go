//go:build linux && (amd64 || arm64)

package runner

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/sandbox"
)

// TestVerifiedWorkLandsOnTaskBranches: a worktree task works on its own branch from
// the agent's target branch; once verified, what the worker left is a commit there,
// authored by the worker agent, with the task, attempt and verifier in trailers; it is
// the task's commit and the ledger's task.complete names it. The next step of the
// chain starts from that commit, so its worker sees the first step's change.
func TestVerifiedWorkLandsOnTaskBranches(t *testing.T) {
	h, repo := gitHarness(t, nil, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	// A branch of the user's that must stay where it is.
	git(t, repo, "branch", "other")

	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main"
	})
	// The second step's worker fails unless the first step's change is in its worktree.
	h.worker("documenter", "writer", `grep -q 'a + b' calc.go || { echo "the fix is not here"; exit 1; }; printf '// Add adds.\n' >> calc.go; echo TASK_COMPLETE`,
		func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" })
	contract := func(check string) contract.Contract {
		return contract.Contract{
			Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "check", Description: "the change is there", Command: check}}},
		}
	}
	// A third worker changes the same line another way, from the same main.
	h.worker("rewriter", "refactor", `sed -i 's/a - b/b + a/' calc.go; echo TASK_COMPLETE`, func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main"
	})
	fix := h.task("Fix Add in calc.go", "developer", contract(`grep -q 'a + b' calc.go`))
	rival := h.task("Rewrite Add", "refactor", contract(`grep -q 'b + a' calc.go`))
	doc := h.task("Document Add", "writer", contract(`grep -q 'Add adds' calc.go`), func(s *models.TaskSpec) { s.DependsOn = []int64{fix.ID} })
	h.start()

	first := h.settled(fix.ID, 2*time.Minute)
	if first.State != models.TaskVerified {
		t.Fatalf("the fix: %s; attempts %+v", first.State, h.attempts(fix.ID))
	}
	checkFixCommitted(t, h, repo, fix.ID, first)

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

	// Merge takes only what was verified: a commit added to the branch afterwards is
	// refused and main does not move; back at the verified commit, main fast-forwards
	// and the worktree is removed.
	lander := h.pool.Landing()
	wt := filepath.Join(h.cfg.Workspaces.Root(), "worktrees", itoa(fix.ID))
	writeFiles(t, wt, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return b + a }\n"})
	git(t, wt, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "a change nobody verified")
	mainBefore := git(t, repo, "rev-parse", "main")
	if _, err := h.svc.Merges.MergeTask(h.ctx, h.boss, fix.ID, lander); ruleOf(err) != models.RuleMergeOnlyVerified {
		t.Fatalf("merging a branch changed after verification: %v, want %s", err, models.RuleMergeOnlyVerified)
	}
	if now := git(t, repo, "rev-parse", "main"); now != mainBefore {
		t.Fatalf("a refused merge moved main from %s to %s", mainBefore, now)
	}
	git(t, repo, "update-ref", "refs/heads/"+first.Branch, first.Commit)
	landed, err := h.svc.Merges.MergeTask(h.ctx, h.boss, fix.ID, lander)
	if err != nil {
		t.Fatalf("merging the verified commit: %v", err)
	}
	if now := git(t, repo, "rev-parse", "main"); now != first.Commit || !landed.FastForward || landed.Target != "main" {
		t.Fatalf("main is at %s after the merge (%+v), want the verified %s by fast-forward", now, landed, first.Commit)
	}
	if _, err := exec.Command("test", "-e", wt).CombinedOutput(); err == nil {
		t.Errorf("the merged task's worktree %s is still there", wt)
	}

	// The rival changed the same line from the old main: its merge conflicts, main
	// stays, and a fix task names the file.
	checkRivalConflicts(t, h, repo, rival.ID, first.Commit, lander)
}

// gitHarness is a harness whose runner is confined (the sandbox must work here), with
// mut applied to its config, and a git repository of files on branch main.
func gitHarness(t *testing.T, mut func(*Config), files map[string]string) (*harness, string) {
	t.Helper()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) {
		c.Sandbox = sb
		if mut != nil {
			mut(c)
		}
	})
	repo := filepath.Join(h.root, "repo")
	writeFiles(t, repo, files)
	gitInit(t, repo)
	git(t, repo, "branch", "-M", "main")
	return h, repo
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

// ruleOf is the rule a *models.Error names, or "".
func ruleOf(err error) string {
	var e *models.Error
	if errors.As(err, &e) {
		return e.Rule
	}
	return ""
}

// TestVerifiedBranchesArePushedMergedAndCleaned: with a push remote, a verified task's
// branch reaches the (bare) remote as soon as it is committed; the branch report
// shows it one commit ahead with its diff; with merge commits on, a merge makes one
// even where a fast-forward was possible, pushes the target and deletes the branch;
// a cancelled task's worktree is removed by the runner, a running one's is not.
func TestVerifiedBranchesArePushedMergedAndCleaned(t *testing.T) {
	h, repo := gitHarness(t, func(c *Config) {
		c.Landing = LandingConfig{PushRemote: "origin", MergeCommit: true, DeleteMerged: true, CleanupEvery: 50 * time.Millisecond}
	}, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	bare := filepath.Join(h.root, "remote.git")
	git(t, h.root, "init", "-q", "--bare", bare)
	git(t, repo, "remote", "add", "origin", bare)
	git(t, repo, "push", "-q", "origin", "main")

	onRepo := func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" }
	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, onRepo)
	h.worker("quitter", "tester", `echo 'package calc' > extra.go; exit 3`, onRepo)
	contract := contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "the fix is there", Command: `grep -q 'a + b' calc.go`}}},
	}
	fix := h.task("Fix Add", "developer", contract)
	doomed := h.task("Doomed", "tester", contract)
	h.start()

	done := h.settled(fix.ID, 2*time.Minute)
	if done.State != models.TaskVerified || done.Commit == "" {
		t.Fatalf("the fix: %s commit %q; attempts %+v", done.State, done.Commit, h.attempts(fix.ID))
	}
	h.waitFor("the verified branch on the remote", func() bool {
		out, err := exec.Command("git", "--git-dir="+bare, "rev-parse", "refs/heads/"+done.Branch).Output()
		return err == nil && strings.TrimSpace(string(out)) == done.Commit
	})

	lander := h.pool.Landing()
	report, err := h.svc.Merges.TaskBranch(h.ctx, h.boss, fix.ID, lander)
	must(t, err)
	if report.Ahead != 1 || report.Behind != 0 || !report.TipVerified || report.Merged || report.Target != "main" ||
		!strings.Contains(report.Diff, "+func Add(a, b int) int { return a + b }") {
		t.Fatalf("the branch report before the merge: %+v", report)
	}

	landed, err := h.svc.Merges.MergeTask(h.ctx, h.boss, fix.ID, lander)
	must(t, err)
	if landed.FastForward || landed.Pushed != "origin" || !landed.BranchDeleted {
		t.Fatalf("the merge: %+v, want a merge commit, pushed to origin, the branch deleted", landed)
	}
	if parents := git(t, repo, "log", "-1", "--format=%P", "main"); len(strings.Fields(parents)) != 2 || !strings.Contains(parents, done.Commit) {
		t.Fatalf("main's tip has parents %q, want a merge of the verified %s", parents, done.Commit)
	}
	if remoteMain := git(t, repo, "--git-dir="+bare, "rev-parse", "main"); remoteMain != landed.Commit {
		t.Fatalf("the remote's main is %s, the merge made %s", remoteMain, landed.Commit)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "refs/heads/"+done.Branch).Output(); err == nil {
		t.Fatalf("the merged branch is still there at %s", out)
	}
	if report, err := h.svc.Merges.TaskBranch(h.ctx, h.boss, fix.ID, lander); err != nil || !report.Gone {
		t.Fatalf("the report after the branch was deleted: %+v, %v", report, err)
	}

	// The doomed task is blocked with its worktree in place; cancelled, it goes.
	if b := h.settled(doomed.ID, 2*time.Minute); b.State != models.TaskBlocked {
		t.Fatalf("the doomed task: %s", b.State)
	}
	wt := filepath.Join(h.cfg.Workspaces.Root(), "worktrees", itoa(doomed.ID))
	if _, err := exec.Command("test", "-d", wt).CombinedOutput(); err != nil {
		t.Fatalf("a blocked task's worktree %s is gone: the exec needs it to decide", wt)
	}
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, doomed.ID, models.ActCancel, models.ActionInput{Reason: "not needed"})
	must(t, err)
	h.waitFor("the cancelled task's worktree removed", func() bool {
		_, err := exec.Command("test", "-e", wt).CombinedOutput()
		return err != nil
	})
}

// TestSideBySideStepsMergeBeforeTheNext: a task that depends on two tasks that ran
// side by side starts from the merge of their verified commits; when those commits
// conflict it is blocked (step_conflict) with a fix task that starts from the first
// and must merge the second, and once the fix is verified its retry builds on it.
func TestSideBySideStepsMergeBeforeTheNext(t *testing.T) {
	h, repo := gitHarness(t, nil, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n", "README": "calc\n"})
	onRepo := func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" }
	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, onRepo)
	h.worker("writer", "writer", `echo 'Add adds two numbers.' >> README; echo TASK_COMPLETE`, onRepo)
	h.worker("rival", "refactor", `sed -i 's/a - b/b + a/' calc.go; echo TASK_COMPLETE`, onRepo)
	// The integrator resolves a conflict when briefed to (merging the commit its brief
	// names), and otherwise checks that it starts from the work of both steps.
	h.worker("integrator", "integrator", `brief=$(cat)
case "$brief" in
*"conflict in"*)
	c=$(printf '%s' "$brief" | grep -o 'Merge [0-9a-f]\{40\}' | head -1 | cut -c7-)
	git -c user.name=i -c user.email=i@x merge -q --no-edit "$c" >/dev/null 2>&1
	printf 'package calc\n\nfunc Add(a, b int) int { return a + b + 0 }\n' > calc.go
	git add calc.go && git -c user.name=i -c user.email=i@x commit -qm 'Resolve' && echo TASK_COMPLETE ;;
*) grep -q 'a + b' calc.go && { grep -q 'adds two' README || grep -q 'a + b + 0' calc.go; } && echo TASK_COMPLETE ;;
esac`, onRepo)
	contract := func(check string) contract.Contract {
		return contract.Contract{
			Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "check", Description: "the change is there", Command: check}}},
		}
	}
	fix := h.task("Fix Add", "developer", contract(`grep -q 'a + b' calc.go`))
	doc := h.task("Document Add", "writer", contract(`grep -q 'adds two' README`))
	both := h.task("Integrate", "integrator", contract(`grep -q 'a + b' calc.go && grep -q 'adds two' README`),
		func(s *models.TaskSpec) { s.DependsOn = []int64{fix.ID, doc.ID} })
	h.start()

	a, b := h.settled(fix.ID, 2*time.Minute), h.settled(doc.ID, 2*time.Minute)
	if a.Base != b.Base {
		t.Fatalf("steps side by side started from %s and %s, want the same commit", a.Base, b.Base)
	}
	c := h.settled(both.ID, 2*time.Minute)
	if c.State != models.TaskVerified {
		t.Fatalf("the step after both: %s; attempts %+v", c.State, h.attempts(both.ID))
	}
	if parents := git(t, repo, "log", "-1", "--format=%P", c.Base); parents != a.Commit+" "+b.Commit {
		t.Fatalf("the step after both started from %s with parents %q, want the merge of %s and %s", c.Base, parents, a.Commit, b.Commit)
	}

	// Two steps that change the same line: the next one is blocked with a fix task.
	rival := h.task("Rewrite Add", "refactor", contract(`grep -q 'b + a' calc.go`))
	after := h.task("Integrate the rewrite", "integrator", contract(`grep -q 'a + b + 0' calc.go`),
		func(s *models.TaskSpec) { s.DependsOn = []int64{fix.ID, rival.ID} })
	if blocked := h.settled(after.ID, 2*time.Minute); blocked.State != models.TaskBlocked {
		t.Fatalf("the step after two conflicting steps: %s, want blocked", blocked.State)
	}
	got, err := h.db.GetTask(h.ctx, after.ID)
	must(t, err)
	if len(got.DependsOn) != 3 {
		t.Fatalf("the blocked step depends on %v, want its fix task too", got.DependsOn)
	}
	fixer, err := h.db.GetTask(h.ctx, got.DependsOn[2])
	must(t, err)
	r := h.settled(rival.ID, time.Second)
	if !strings.Contains(fixer.Brief, "calc.go") || fixer.Base != a.Commit || fixer.Role != "integrator" {
		t.Fatalf("the fix task: role %s, base %s (want %s), brief %q", fixer.Role, fixer.Base, a.Commit, fixer.Brief)
	}
	if items := h.blockedPayload(after.ID); !strings.Contains(fmt.Sprint(items), models.RuleStepConflict) {
		t.Errorf("the inbox item does not name %s: %+v", models.RuleStepConflict, items)
	}
	if f := h.settled(fixer.ID, 2*time.Minute); f.State != models.TaskVerified {
		t.Fatalf("the fix task: %s; attempts %+v", f.State, h.attempts(fixer.ID))
	}
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, after.ID, models.ActRetry, models.ActionInput{})
	must(t, err)
	h.waitFor("the retried step verified", func() bool {
		tk, err := h.db.GetTask(h.ctx, after.ID)
		return err == nil && tk.State == models.TaskVerified
	})
	done, err := h.db.GetTask(h.ctx, after.ID)
	must(t, err)
	f, _ := h.db.GetTask(h.ctx, fixer.ID)
	if done.Base != f.Commit || git(t, repo, "merge-base", "--is-ancestor", r.Commit, done.Commit) != "" {
		t.Fatalf("the retried step started from %s, want the fix's %s holding the rival's %s", done.Base, f.Commit, r.Commit)
	}
}

// TestWorkerMovesOnlyItsOwnBranch: a confined worker commits to its own branch, but
// cannot move the target, make a branch or a tag elsewhere, or rewrite packed refs:
// the only way its work reaches main is a lead's merge of what was verified.
func TestWorkerMovesOnlyItsOwnBranch(t *testing.T) {
	h, repo := gitHarness(t, nil, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	git(t, repo, "branch", "release")
	git(t, repo, "pack-refs", "--all") // release lives in packed-refs only
	h.worker("sneak", "developer", `id='-c user.name=s -c user.email=s@x'
sed -i 's/a - b/a + b/' calc.go
git $id commit -qam 'Fix Add' || echo "OWN BRANCH REFUSED"
git update-ref refs/heads/main HEAD 2>/dev/null && echo "MOVED MAIN"
git update-ref refs/heads/release HEAD 2>/dev/null && echo "MOVED RELEASE"
git branch sneaky HEAD 2>/dev/null && echo "MADE A BRANCH"
git tag evil 2>/dev/null && echo "MADE A TAG"
echo TASK_COMPLETE`, func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main" })
	mainAt, releaseAt := git(t, repo, "rev-parse", "main"), git(t, repo, "rev-parse", "release")
	task := h.task("Fix Add", "developer", contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "fixed", Command: `grep -q 'a + b' calc.go`}}},
	})
	h.start()
	done := h.settled(task.ID, 2*time.Minute)
	if done.State != models.TaskVerified {
		t.Fatalf("the task: %s; attempts %+v", done.State, h.attempts(task.ID))
	}
	out := h.attempts(task.ID)[0].OutputTail
	for _, bad := range []string{"OWN BRANCH REFUSED", "MOVED MAIN", "MOVED RELEASE", "MADE A BRANCH", "MADE A TAG"} {
		if strings.Contains(out, bad) {
			t.Errorf("the worker's output says %q:\n%s", bad, out)
		}
	}
	if now := git(t, repo, "rev-parse", "main"); now != mainAt {
		t.Errorf("the worker moved main to %s", now)
	}
	if now := git(t, repo, "rev-parse", "release"); now != releaseAt {
		t.Errorf("the worker moved release to %s", now)
	}
	if refs := git(t, repo, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "sneaky") || strings.Contains(refs, "evil") {
		t.Errorf("the worker made refs outside its branch:\n%s", refs)
	}
	if author := git(t, repo, "log", "-1", "--format=%an", done.Commit+"^"); author != "s" {
		t.Errorf("the worker's own commit on its branch is not under the verified one (author %q)", author)
	}
}

// checkFixCommitted checks the first step's verified work: on its own task branch,
// based on main (which did not move), committed with the trailers that name the task,
// and named in the ledger. Split out of TestVerifiedWorkLandsOnTaskBranches to keep
// that test within the length limit.
func checkFixCommitted(t *testing.T, h *harness, repo string, fixID int64, first *models.Task) {
	t.Helper()
	if want := "countersign/task-" + itoa(fixID); first.Branch != want || len(first.Base) != 40 || len(first.Commit) != 40 {
		t.Fatalf("the fix's branch %q base %q commit %q, want branch %s and both commits", first.Branch, first.Base, first.Commit, want)
	}
	if tip := git(t, repo, "rev-parse", first.Branch); tip != first.Commit {
		t.Fatalf("the branch's tip is %s, the task's commit %s", tip, first.Commit)
	}
	if base := git(t, repo, "rev-parse", "main"); base != first.Base {
		t.Fatalf("the fix was based on %s, main is at %s (main must not move)", first.Base, base)
	}
	trailers := git(t, repo, "log", "-1", "--format=%(trailers)%an", first.Commit)
	for _, want := range []string{"Countersign-Task: " + itoa(fixID), "Countersign-Attempt: 1", "Countersign-Verified-By: runner", "fixer"} {
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
		if e.TaskID != nil && *e.TaskID == fixID && strings.Contains(string(e.Message), `"commit":"`+first.Commit+`"`) {
			named = true
		}
	}
	if !named {
		t.Errorf("no task.complete names the verified commit %s", first.Commit)
	}
}

// checkRivalConflicts checks that the rival, which changed the same line from the old
// main, is verified but its merge conflicts: main stays at the verified commit and a
// fix task names the file. Split out of TestVerifiedWorkLandsOnTaskBranches to keep
// that test within the length limit.
func checkRivalConflicts(t *testing.T, h *harness, repo string, rivalID int64, verified string, lander *Landing) {
	t.Helper()
	if r := h.settled(rivalID, 2*time.Minute); r.State != models.TaskVerified {
		t.Fatalf("the rival: %s", r.State)
	}
	_, err := h.svc.Merges.MergeTask(h.ctx, h.boss, rivalID, lander)
	if ruleOf(err) != models.RuleMergeConflict || !strings.Contains(err.Error(), "calc.go") {
		t.Fatalf("merging a conflicting branch: %v, want %s naming calc.go", err, models.RuleMergeConflict)
	}
	if now := git(t, repo, "rev-parse", "main"); now != verified {
		t.Fatalf("a conflicting merge moved main to %s", now)
	}
	all, err := h.db.ListTasks(h.ctx, models.TaskFilter{})
	must(t, err)
	found := false
	for _, tk := range all {
		if strings.HasPrefix(tk.Title, "Resolve the merge conflict of task "+itoa(rivalID)) && strings.Contains(tk.Brief, "calc.go") {
			found = true
		}
	}
	if !found {
		t.Error("no fix task carries the conflicting file")
	}
}
