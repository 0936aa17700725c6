package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/judge"
)

// notReadyCase is one way a contract cannot be checked before delegation.
type notReadyCase struct {
	name     string
	contract func(h *harness, c *contract.Contract)
	agent    func(h *harness, a *models.Agent)
	missing  string // in the one missing thing listed
}

func notReadyCases() []notReadyCase {
	return []notReadyCase{
		{name: "verify tool not installed", contract: func(_ *harness, c *contract.Contract) {
			c.Completion.Verify = []string{"no-such-tool-xyz --check"}
		}, missing: `verify command "no-such-tool-xyz --check" needs no-such-tool-xyz, which is not on PATH`},
		{name: "activity command's tool not installed", contract: func(h *harness, c *contract.Contract) {
			must(h.t, h.svc.Templates.SaveRules(h.ctx, h.boss, &models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{
				"lint": "cd . && LINT_LEVEL=2 no-such-linter-xyz ./... 2>&1 | tee lint.log"}}}))
			c.Verification.Criteria = []contract.Criterion{{Activity: "lint", Description: "lints clean"}}
		}, missing: "criterion lint (command \"cd . && LINT_LEVEL=2 no-such-linter-xyz ./... 2>&1 | tee lint.log\") needs no-such-linter-xyz, which is not on PATH"},
		{name: "a stack command's tool not installed", contract: func(_ *harness, c *contract.Contract) {
			// The tool hides inside a command substitution: only the criterion's Tools
			// name it.
			c.Verification.Criteria = []contract.Criterion{{Activity: "format", Description: "formatted",
				Command: `files=$(no-such-fmt-xyz -l .); test -z "$files"`, Tools: []string{"no-such-fmt-xyz"}}}
		}, missing: "needs no-such-fmt-xyz, which is not on PATH"},
		{name: "clean asked of a workspace that is no git repository", contract: func(_ *harness, c *contract.Contract) {
			c.Completion.Clean = true
		}, missing: "is not a git repository"},
		{name: "output path leads out of the workspace", agent: func(h *harness, a *models.Agent) {
			dir := filepath.Join(h.root, "checkout")
			must(h.t, os.MkdirAll(dir, 0o750))
			must(h.t, os.Symlink("/etc", filepath.Join(dir, "out")))
			a.Workdir = dir
		}, missing: "leads outside the workspace: out is a symbolic link to /etc"},
		{name: "worktree agent, verify tool not installed", agent: func(h *harness, a *models.Agent) {
			a.Workdir, a.Worktree = gitRepo(h), true
		}, contract: func(_ *harness, c *contract.Contract) {
			c.Completion.Verify = []string{"no-such-tool-xyz"}
		}, missing: "needs no-such-tool-xyz, which is not on PATH"},
	}
}

// gitRepo makes a git repository with one commit for a worktree agent.
func gitRepo(h *harness) string {
	repo := filepath.Join(h.root, "repo")
	must(h.t, os.MkdirAll(repo, 0o750))
	gitIn(h.t, repo, "init", "-q")
	gitIn(h.t, repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "base")
	return repo
}

// TestNotReadyBlocksBeforeAnyAttempt: each contract that cannot be checked as things
// stand blocks with stage readiness before delegation: the one missing thing listed in
// the blocked item, no attempt recorded or used, no worker started (it would leave a
// marker), nothing on the ledger. Checking again while it is still missing blocks it
// again, the same way.
func TestNotReadyBlocksBeforeAnyAttempt(t *testing.T) {
	for _, d := range dialects() {
		for _, nc := range notReadyCases() {
			t.Run(d+"/"+nc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, d, nil)
				marker := filepath.Join(t.TempDir(), "worker-ran")
				h.worker("dev", "developer", "echo ran >> "+shq(marker)+"; "+script(t, "ok.sh"), func(a *models.Agent) {
					if nc.agent != nil {
						nc.agent(h, a)
					}
				})
				c := fileContract()
				if nc.contract != nil {
					nc.contract(h, &c)
				}
				task := h.task("not ready: "+nc.name, "developer", c)
				h.start()
				for round := 1; round <= 2; round++ {
					got := h.wait(task.ID, models.TaskBlocked, models.TaskVerified)
					assertNotReady(t, h, got, marker, nc.missing)
					if round == 1 {
						// Check again: still missing, so blocked again before any worker.
						if _, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{}); err != nil {
							t.Fatalf("check again: %v", err)
						}
					}
				}
			})
		}
	}
}

// assertNotReady checks that task got is blocked as not ready, listing want, with no
// attempt and no worker run.
func assertNotReady(t *testing.T, h *harness, got *models.Task, marker, want string) {
	t.Helper()
	if got.State != models.TaskBlocked || got.AttemptsUsed != 0 {
		t.Fatalf("state %s, attempts used %d; want blocked with 0", got.State, got.AttemptsUsed)
	}
	if atts := h.attempts(got.ID); len(atts) != 0 {
		t.Fatalf("%d attempts recorded, want none: %+v", len(atts), atts)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the worker ran (marker %s: %v)", marker, err)
	}
	p := h.blockedPayload(got.ID)
	if len(p.Missing) != 1 || !strings.Contains(p.Missing[0], want) {
		t.Fatalf("missing %q, want one item with %q", p.Missing, want)
	}
	if len(p.Attempts) != 1 || p.Attempts[0].Stage != models.StageReadiness || p.Attempts[0].Attempt != 0 || !strings.Contains(p.Attempts[0].Failure, want) {
		t.Fatalf("payload attempts %+v", p.Attempts)
	}
	if strings.Contains(p.Missing[0], contract.TaskIDPlaceholder) {
		t.Errorf("unexpanded path in %q", p.Missing[0])
	}
	if slices.Contains(h.events(got.ID), "attempt.started") {
		t.Errorf("events %v: an attempt started", h.events(got.ID))
	}
	if lt := h.ledgerTypes(got.ID); len(lt) != 0 {
		t.Errorf("ledger %v, want nothing: no work was done", lt)
	}
}

// TestCheckAgainRunsOnceInstalled: a verify tool that is not installed blocks the task
// as not ready and the worker never starts; once a script of that name is on the
// runner's PATH, "check again" (a retry without guidance) runs readiness again, the
// worker runs once and the task is verified by the tool. A retry without guidance of
// a task that failed its checks is still refused.
func TestCheckAgainRunsOnceInstalled(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")) // before the pools start
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			// The judge's PATH names bin too: verify commands see no other PATH.
			h := newHarness(t, d, func(c *Config) { c.JudgePath = append([]string{bin}, judge.DefaultPath...) })
			tool := filepath.Join(bin, "no-such-tool-xyz")
			os.Remove(tool)
			runs := filepath.Join(t.TempDir(), "runs")
			h.worker("dev", "developer", "echo ran >> "+shq(runs)+"; "+script(t, "ok.sh"))
			c := fileContract()
			c.Completion.Verify = []string{"no-such-tool-xyz --check"}
			task := h.task("needs a tool", "developer", c)
			h.start()
			assertNotReady(t, h, h.wait(task.ID, models.TaskBlocked, models.TaskVerified), runs, "no-such-tool-xyz, which is not on PATH")

			// Installed: a script that checks it got --check.
			must(t, os.WriteFile(tool, []byte("#!/bin/sh\n[ \"$1\" = --check ] && echo checked > checked.txt\n"), 0o755))
			if _, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{}); err != nil {
				t.Fatalf("check again: %v", err)
			}
			got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
			if got.State != models.TaskVerified || got.AttemptsUsed != 0 {
				t.Fatalf("state %s attempts used %d; attempts %+v", got.State, got.AttemptsUsed, h.attempts(task.ID))
			}
			if n := lineCount(t, runs); n != 1 {
				t.Errorf("the worker ran %d times, want 1", n)
			}
			atts := h.attempts(task.ID)
			if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed || len(atts[0].Criteria) == 0 ||
				atts[0].Criteria[0].Command != "no-such-tool-xyz --check" || atts[0].Criteria[0].Status != models.VerdictPass {
				t.Fatalf("attempts %+v", atts)
			}
			items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: task.ID, IncludeResolved: true})
			must(t, err)
			if len(items) != 1 || !items[0].Resolved || items[0].Resolution != "checked again" {
				t.Errorf("inbox items %+v", items)
			}

			// Guidance is still required of a retry after a real failure.
			h.worker("lazy", "writer", script(t, "noout.sh"))
			failed := h.task("fails its checks", "writer", fileContract())
			h.wait(failed.ID, models.TaskBlocked)
			_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, failed.ID, models.ActRetry, models.ActionInput{})
			if models.ErrorCode(err) != models.EINVALID {
				t.Fatalf("retry without guidance after a failure: %v, want EINVALID", err)
			}
		})
	}
}

// TestReadyContractsRun: what readiness reads must raise no false alarm: builtins,
// keywords, assignments, redirections, quoted and expanded words, relative scripts.
func TestReadyContractsRun(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"))
	c := fileContract()
	c.Completion.Verify = []string{
		"FOO=1 true", "test -f out/missing || exit 0", "cd . && sh -c 'exit 0' 2>/dev/null", `if [ -n "$HOME" ]; then :; fi`,
		`for x in a b; do echo "$x"; done`, "./not-yet-there.sh --maybe || true", `"$SHELL" -c true || true`, "env -i PATH=/usr/bin:/bin true",
	}
	task := h.task("plain shell", "developer", c)
	h.start()
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskVerified {
		t.Fatalf("state %s; attempts %+v; inbox %+v", got.State, h.attempts(task.ID), h.inboxTitles(task.ID))
	}
}

// inboxTitles lists the titles of task id's inbox items.
func (h *harness) inboxTitles(id int64) []string {
	h.t.Helper()
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: id, IncludeResolved: true})
	must(h.t, err)
	var out []string
	for _, it := range items {
		out = append(out, it.Kind+": "+it.Title)
	}
	return out
}

// lineCount counts the lines of a file; 0 when it does not exist.
func lineCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	return strings.Count(string(b), "\n")
}
