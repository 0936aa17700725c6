//go:build linux && (amd64 || arm64)

package runner

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/sandbox"
)

// buildProbe builds the sandbox package's hostile worker into dir.
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command("go", "build", "-o", bin, "./sandbox/internal/probe").CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	return bin
}

// readProbe parses a probe report the worker, a verify command or the reviewer left
// in the workspace.
func readProbe(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the probe left no report: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, verdict, _ := strings.Cut(line, ": ")
		got[name] = verdict
	}
	return got
}

// TestHostileWorkerConfined runs the hostile probe as a worker, as a verify command and
// as a reviewer, through the pool: each tries to read the judge's database and the
// server's environment, list another workspace, write outside its own, signal the
// server, reach PostgreSQL over TCP, Multipath TCP and its unix socket, and use a
// capability. Confined, every one of those fails while the task is still verified;
// with the sandbox off every one succeeds, so the test can fail.
func TestHostileWorkerConfined(t *testing.T) {
	if c, err := net.Dial("tcp", "127.0.0.1:5432"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skip("no PostgreSQL on 127.0.0.1:5432")
	} else {
		c.Close()
	}
	probeDir := t.TempDir()
	probe := buildProbe(t, probeDir)

	escapes := []string{"read-db", "read-environ", "signal-server", "list-other-workspace", "write-tmp",
		"write-parent", "tcp-postgres", "mptcp-postgres", "tfo-postgres", "unix-postgres", "write-meta"}
	if os.Geteuid() == 0 {
		escapes = append(escapes, "capabilities")
	}
	needs := []string{"write-workspace", "write-tmpdir", "write-home", "run-sh", "run-git", "read-brief"}

	for _, tc := range []struct {
		name string
		mode sandbox.Mode
	}{{"confined", sandbox.ModeOn}, {"sandbox off", sandbox.ModeOff}} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandbox.Probe(tc.mode)
			if !sb.Ready() {
				t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
			}
			// The reports go to directories of the test's: the worker's and the
			// reviewer's granted to those agents, the verify command's to judged runs
			// (JudgeWrite), since it runs in the judge's view, gone once the checks end.
			reports, judged := t.TempDir(), t.TempDir()
			h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.JudgeWrite = sb, []string{judged} })
			// The real API, which the worker reaches with its attempt token.
			api := httptest.NewServer(handlers.NewServer(handlers.Deps{Service: h.svc, Log: h.cfg.Log}))
			defer api.Close()
			h.cfg.APIURL = api.URL
			stranger := h.task("someone else's task", "nobody", contract.Contract{Verification: contract.Verification{Type: contract.VerifySkip}})
			other := filepath.Join(h.root, "work", "tasks", "999")
			must(t, os.MkdirAll(other, 0o750))
			db := filepath.Join(h.root, "countersign.db")
			must(t, os.WriteFile(db, []byte("the judge's records"), 0o640))
			run := func(report string, extra ...string) string {
				args := []string{shq(probe), "-db", shq(db), "-pid", fmt.Sprint(os.Getpid()), "-other", shq(other),
					"-api", `"$COUNTERSIGN_URL/api/v1/tasks/$COUNTERSIGN_TASK_ID"`,
					"-api-other", fmt.Sprintf(`"$COUNTERSIGN_URL/api/v1/tasks/%d"`, stranger.ID)}
				return strings.Join(append(args, extra...), " ") + " > " + report + " 2>&1"
			}
			readProbeDir := func(a *models.Agent) { a.Sandbox.Read, a.Sandbox.Write = []string{probeDir}, []string{reports} }
			workerArgs := []string{}
			if tc.mode == sandbox.ModeOn {
				workerArgs = append(workerArgs, "-go-test")
			}
			h.worker("mallory", "developer", run(shq(filepath.Join(reports, "worker.txt")), workerArgs...)+"; echo TASK_COMPLETE", readProbeDir)
			h.worker("rex", "reviewer", run(shq(filepath.Join(reports, "review.txt")))+"; echo REVIEW_PASS", readProbeDir)
			c := contract.Contract{
				Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", Verify: []string{run(shq(filepath.Join(judged, "verify.txt")))}},
				Verification: contract.Verification{Type: contract.VerifyVerifiable},
				Review:       &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}},
			}
			task := h.task("probe the sandbox", "developer", c)
			h.start()
			// go test with the agent's cold build cache takes a while on a busy machine.
			var got *models.Task
			h.waitLong(3*time.Minute, "the probe task to settle", func() bool {
				t, err := h.db.GetTask(h.ctx, task.ID)
				must(h.t, err)
				got = t
				return t.State == models.TaskVerified || t.State == models.TaskBlocked
			})
			if got.State != models.TaskVerified {
				t.Fatalf("task %s, want verified; attempts %+v", got.State, h.attempts(task.ID))
			}
			checkProbeReports(t, tc.mode, reports, judged, escapes, needs)
		})
	}
}

// TestConfinedWorktree: a confined worker in a git worktree can commit (objects, refs
// and its worktree's state are writable) but cannot plant a hook or change the
// configuration of the repository it was taken from.
func TestConfinedWorktree(t *testing.T) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox = sb })
	h.cfg.Workspaces.Confine(sb)
	repo := filepath.Join(h.root, "repo")
	must(t, os.MkdirAll(repo, 0o750))
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cmd := `echo change > change.txt && git add change.txt && git -c user.email=w@x -c user.name=w commit -qm work && ` +
		`(echo 'touch /tmp/pwned' > "$(git rev-parse --git-common-dir)/hooks/post-checkout" 2>/dev/null && echo hook-planted || echo hook-refused) > hook.txt; ` +
		`(git config --file "$(git rev-parse --git-common-dir)/config" core.fsmonitor evil 2>/dev/null && echo config-changed || echo config-refused) >> hook.txt; echo TASK_COMPLETE`
	h.worker("wendy", "developer", cmd, func(a *models.Agent) { a.Workdir, a.Worktree = repo, true })
	task := h.task("commit in a worktree", "developer", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE"},
		Verification: contract.Verification{Type: contract.VerifySkip},
	})
	h.start()
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskVerified {
		t.Fatalf("task %s; attempts %+v", got.State, h.attempts(task.ID))
	}
	b, err := os.ReadFile(filepath.Join(h.root, "work", "worktrees", fmt.Sprint(task.ID), "hook.txt"))
	must(t, err)
	if got := strings.Fields(string(b)); len(got) != 2 || got[0] != "hook-refused" || got[1] != "config-refused" {
		t.Errorf("the worker reached the repository's hooks or config: %q", b)
	}
	// The worktree's HEAD is detached; its commit lives in the repository's objects.
	wt := filepath.Join(h.root, "work", "worktrees", fmt.Sprint(task.ID))
	out, err := exec.Command("git", "-C", wt, "log", "--format=%s").CombinedOutput()
	must(t, err)
	if !strings.Contains(string(out), "work") {
		t.Errorf("the worker's commit is not in the repository: %s", out)
	}
}

// The agent page's effective policy names the agent's own grants beside the defaults,
// and says plainly when nothing is confined.
func TestEffectivePolicy(t *testing.T) {
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.APIURL = sandbox.Probe(sandbox.ModeOn), "http://127.0.0.1:8080" })
	a := h.worker("pia", "developer", "true", func(a *models.Agent) {
		a.Sandbox = models.AgentSandbox{Read: []string{"/srv/data"}, Connect: []int{5432}}
	})
	p, err := New(h.cfg)
	must(t, err)
	got := strings.Join(p.EffectivePolicy(a), "\n")
	for _, want := range []string{"read and execute /srv/data", "tasks/<task>", "agents/pia/home",
		"connect over TCP to ports 80, 443, 5432, 8080", "open no unix socket"} {
		if !strings.Contains(got, want) {
			t.Errorf("effective policy lacks %q:\n%s", want, got)
		}
	}
	h.cfg.Sandbox = sandbox.Probe(sandbox.ModeOff)
	p, err = New(h.cfg)
	must(t, err)
	if got := p.EffectivePolicy(a); len(got) != 1 || !strings.Contains(got[0], "unconfined") {
		t.Errorf("sandbox off: %q", got)
	}
}

// checkProbeReports checks the probe's reports of the worker, the verify command and
// the reviewer: every escape denied when confined (and not denied with the sandbox
// off), every need met, and the API reachable only as each one should reach it.
// Split out of TestHostileWorkerConfined to keep that test within the length limit.
func checkProbeReports(t *testing.T, mode sandbox.Mode, reports, judged string, escapes, needs []string) {
	t.Helper()
	for _, who := range []string{"worker", "verify", "review"} {
		dir := reports
		if who == "verify" {
			dir = judged
		}
		report := readProbe(t, filepath.Join(dir, who+".txt"))
		for _, name := range escapes {
			denied := strings.HasPrefix(report[name], "denied")
			if mode == sandbox.ModeOn && !denied {
				t.Errorf("%s %s: %q, want denied", who, name, report[name])
			}
			if mode == sandbox.ModeOff && denied {
				t.Errorf("%s %s: %q, want ok with the sandbox off", who, name, report[name])
			}
		}
		wantNeeds := needs
		if who == "worker" {
			// Only the worker holds a token: its own task, nobody else's.
			wantNeeds = append(wantNeeds, "api")
			if !strings.Contains(report["api-other-task"], "status 403") {
				t.Errorf("worker api-other-task: %q, want 403", report["api-other-task"])
			}
		} else if who == "verify" {
			// A judged run has no COUNTERSIGN_URL and, confined, no port of it.
			if strings.Contains(report["api"], "status") {
				t.Errorf("verify api: %q, want unreachable: the judge's runs get no egress", report["api"])
			}
		} else if !strings.Contains(report["api"], "status 401") {
			t.Errorf("%s api: %q, want 401 (reachable, but no token)", who, report["api"])
		}
		if who == "worker" && mode == sandbox.ModeOn {
			wantNeeds = append(wantNeeds, "go-test")
		}
		for _, name := range wantNeeds {
			if report[name] != "ok" {
				t.Errorf("%s %s: %q, want ok", who, name, report[name])
			}
		}
	}
}
