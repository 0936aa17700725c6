package pages_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/workspace"
)

// TestTaskPageMergesVerifiedWork: a verified worktree task's page shows its branch,
// the verified commit, how far it is ahead of the target and its diff; a lead's merge
// button lands exactly the verified commit, anyone else gets no button and a refusal;
// a branch changed after verification is refused with the rule on the page, and the
// target does not move. The agents page shows the disk the workspaces use.
func TestTaskPageMergesVerifiedWork(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	must(t, os.MkdirAll(repo, 0o755))
	must(t, os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a - b }\n"), 0o644))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "base"}} {
		gitIn(t, repo, args...)
	}
	ws, err := workspace.New(filepath.Join(root, "work"))
	must(t, err)
	e := newEnvWith(t, "sqlite", envOptions{lander: runner.NewLanding(ws, runner.LandingConfig{}), usage: ws.DiskUsage})
	e.team()
	ctx := e.ctx()

	// dev's checkout is the repository; its task was verified on its own branch.
	dev := e.agents["dev"]
	dev.Workdir, dev.Worktree, dev.TargetBranch = repo, true, "main"
	must(t, e.db.UpdateAgent(ctx, dev))
	g := &models.Goal{Title: "Add adds"}
	must(t, e.svc.Goals.CreateGoal(ctx, models.System, g))
	tk := e.humanTask("Fix Add", &g.ID, models.TaskVerified)
	doc := e.humanTask("Document Add", &g.ID, models.TaskVerified)
	branch := "countersign/task-" + itoa64(tk.ID)
	w, err := ws.Prepare(ctx, workspace.Request{TaskID: tk.ID, Attempt: 1, AgentWorkdir: repo, Worktree: true, Branch: branch, Base: "main"})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w.Dir, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n"), 0o644))
	tree, err := ws.WorktreeTree(ctx, w) // the tree a judge would have judged
	must(t, err)
	commit, err := ws.CommitVerified(ctx, w, workspace.CommitInfo{Tree: tree, Author: workspace.Identity{Name: "dev", Email: "dev@x"}, Subject: "Fix Add"})
	must(t, err)
	setBranch(t, e, tk.ID, branch, w.BaseCommit(), commit)
	mainAt := gitIn(t, repo, "rev-parse", "main")

	checkMergeRefusedToExec(t, e, tk, branch, commit)
	// A commit on the branch after verification: refused, on the page, main unmoved.
	lead := e.browser().login("lead")
	if !strings.Contains(lead.get("/tasks/"+itoa64(tk.ID)).Body, `data-testid="branch-merge"`) {
		t.Fatal("the lead is not offered the merge button")
	}
	must(t, os.WriteFile(filepath.Join(w.Dir, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return 0 }\n"), 0o644))
	gitIn(t, w.Dir, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "unverified")
	r := lead.post("/tasks/"+itoa64(tk.ID)+"/merge", nil)
	if r.Status != http.StatusSeeOther {
		t.Fatalf("a refused merge: %d, want a redirect back to the task", r.Status)
	}
	pg := lead.get("/tasks/" + itoa64(tk.ID))
	if !strings.Contains(pg.Body, "not what was verified") || !strings.Contains(pg.Body, "changed after verification") {
		t.Fatalf("the task page does not say why the merge was refused:\n%s", pg.Body)
	}
	if now := gitIn(t, repo, "rev-parse", "main"); now != mainAt {
		t.Fatalf("a refused merge moved main to %s", now)
	}

	// Back at the verified commit, the lead's merge lands it.
	gitIn(t, repo, "update-ref", "refs/heads/"+branch, commit)
	r = lead.post("/tasks/"+itoa64(tk.ID)+"/merge", url.Values{})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("the merge: %d", r.Status)
	}
	if now := gitIn(t, repo, "rev-parse", "main"); now != commit {
		t.Fatalf("main is at %s after the merge, want the verified %s", now, commit)
	}
	pg = lead.get("/tasks/" + itoa64(tk.ID))
	if !strings.Contains(pg.Body, "merged into main") || !strings.Contains(pg.Body, "Merged: main holds the verified work.") ||
		strings.Contains(pg.Body, `data-testid="branch-merge"`) {
		t.Fatalf("after the merge the task page does not say so, or still offers it:\n%s", pg.Body)
	}
	if got := eventTypes(t, e, tk.ID); !strings.Contains(got, models.EventTaskMerged) {
		t.Errorf("no %s event: %s", models.EventTaskMerged, got)
	}

	mergeVerifiedGoal(t, e, ws, repo, g, doc, lead, commit)
	if ag := e.browser().login("admin").get("/agents"); !strings.Contains(ag.Body, `data-testid="workspace-usage"`) {
		t.Error("the agents page does not show the workspaces' disk usage")
	}
}

// checkMergeRefusedToExec checks that someone who is not a lead sees the branch but no
// merge, and is refused.
func checkMergeRefusedToExec(t *testing.T, e *env, tk *models.Task, branch, commit string) {
	t.Helper()
	// Someone who is not a lead sees the branch but no merge, and is refused.
	execB := e.browser().login("exec")
	pg := execB.get("/tasks/" + itoa64(tk.ID))
	for _, want := range []string{`data-testid="task-branch"`, branch, commit[:12], `data-ahead="1"`, "+func Add(a, b int) int { return a + b }"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the task page lacks %q", want)
		}
	}
	if strings.Contains(pg.Body, `data-testid="branch-merge"`) {
		t.Fatal("an exec is offered the merge button")
	}
	if r := execB.post("/tasks/"+itoa64(tk.ID)+"/merge", nil); r.Status != http.StatusForbidden {
		t.Fatalf("an exec's merge: %d, want 403", r.Status)
	}
}

// mergeVerifiedGoal verifies the goal, whose second step built on the first, and
// checks that merging it lands the second step (the first is already there).
func mergeVerifiedGoal(t *testing.T, e *env, ws *workspace.Manager, repo string, g *models.Goal, doc *models.Task, lead *browser, commit string) {
	t.Helper()
	ctx := e.ctx()
	// The goal's second step built on the first: merging the verified goal lands it
	// (the first is already there).
	docBranch := "countersign/task-" + itoa64(doc.ID)
	dw, err := ws.Prepare(ctx, workspace.Request{TaskID: doc.ID, Attempt: 1, AgentWorkdir: repo, Worktree: true, Branch: docBranch, Base: commit})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dw.Dir, "calc.go"), []byte("package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"), 0o644))
	docTree, err := ws.WorktreeTree(ctx, dw)
	must(t, err)
	docCommit, err := ws.CommitVerified(ctx, dw, workspace.CommitInfo{Tree: docTree, Author: workspace.Identity{Name: "dev", Email: "dev@x"}, Subject: "Document Add"})
	must(t, err)
	setBranch(t, e, doc.ID, docBranch, commit, docCommit)
	if gp := lead.get("/goals/" + itoa64(g.ID)); strings.Contains(gp.Body, `data-testid="goal-merge"`) {
		t.Fatal("a goal that is not verified offers the merge")
	}
	if _, err := e.svc.Goals.VerifyGoal(ctx, e.agents["lead"], g.ID, "integrated and tried"); err != nil {
		t.Fatal(err)
	}
	if gp := lead.get("/goals/" + itoa64(g.ID)); !strings.Contains(gp.Body, `data-testid="goal-merge"`) {
		t.Fatal("the verified goal's page offers no merge")
	}
	if r := lead.post("/goals/"+itoa64(g.ID)+"/merge", nil); r.Status != http.StatusSeeOther {
		t.Fatalf("the goal's merge: %d", r.Status)
	}
	if now := gitIn(t, repo, "rev-parse", "main"); now != docCommit {
		t.Fatalf("main is at %s after the goal's merge, want the second step's verified %s", now, docCommit)
	}
	if gp := lead.get("/goals/" + itoa64(g.ID)); !strings.Contains(gp.Body, "Merged the verified work of 2 task(s)") {
		t.Fatalf("the goal page does not say what was merged:\n%s", gp.Body)
	}
}

// setBranch records a task's branch, base and verified commit, as the runner does.
func setBranch(t *testing.T, e *env, id int64, branch, base, commit string) {
	t.Helper()
	ctx := e.ctx()
	must(t, e.db.InTx(ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(ctx, id)
		if err != nil {
			return err
		}
		lt.Branch, lt.Base, lt.Commit = branch, base, commit
		return tx.UpdateTask(ctx, lt)
	}))
}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// eventTypes lists the types of task id's events, comma-separated.
func eventTypes(t *testing.T, e *env, id int64) string {
	t.Helper()
	evs, err := e.db.ListTaskEvents(e.ctx(), id, 100)
	must(t, err)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return strings.Join(types, ",")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
