//go:build linux && (amd64 || arm64)

package runner

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/forge/forgetest"
	"github.com/countersign/countersign/runner/forgesync"
)

// forgeRig is a worktree agent whose verified work goes to a scripted forge (a real
// bare repository over smart HTTP behind the documented REST API), the forge sync,
// and the webhook endpoint's Deliver.
type forgeRig struct {
	h      *harness
	srv    *forgetest.Server
	repo   string
	forge  *models.Forge
	secret string
	token  string
	sync   *forgesync.Syncer
	hook   *httptest.Server
	logs   *syncBuffer
}

// syncBuffer is a log sink the pool's and the sync's loggers share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// forgeWorker fixes Add and, when the brief carries a reviewer's request to document
// it, documents it. It is hostile too: it prints its whole environment and hunts for
// forge tokens (GitHub's ghp_ and GitLab's glpat- prefixes) in every file and process
// it can read, so that a token within its reach ends up in its output.
const forgeWorker = `brief=$(cat)
env
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f" 2>/dev/null; done | grep -aoE '(ghp_|glpat-)[A-Za-z0-9_-]+' || true
grep -raoE '(ghp_|glpat-)[A-Za-z0-9_-]+' "$HOME" /tmp "$FORGE_HUNT" 2>/dev/null | head -20 || true
sed -i 's/a - b/a + b/' calc.go
case "$brief" in *"document Add"*) printf '// Add adds.\n' >> calc.go;; esac
echo TASK_COMPLETE`

func newForgeRig(t *testing.T, kind forge.Kind, poll time.Duration) *forgeRig {
	logs := &syncBuffer{}
	h, repo := gitHarness(t, func(c *Config) {
		c.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	r := &forgeRig{h: h, repo: repo, logs: logs}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	if kind == forge.GitHub {
		r.token = "ghp_" + hex.EncodeToString(b)
		r.srv = forgetest.NewGitHub(t, "acme", "calc", r.token)
	} else {
		r.token = "glpat-" + hex.EncodeToString(b)
		r.srv = forgetest.NewGitLab(t, "acme/tools/calc", r.token)
	}
	// The forge's main is the checkout's main: pull requests have a base.
	git(t, repo, "push", "-q", r.srv.BareDir(), "main")
	forges, err := models.NewForges(h.svc)
	must(t, err)
	cfg := r.srv.Config()
	r.forge = &models.Forge{Name: "origin", Kind: string(kind), BaseURL: cfg.BaseURL, Repo: cfg.Repo, Token: r.token}
	r.secret, err = forges.Create(h.ctx, h.boss, r.forge)
	must(t, err)
	fixer := h.worker("fixer", "developer", strings.ReplaceAll(forgeWorker, "$FORGE_HUNT", h.root), func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch, a.Forge = repo, true, "main", "origin"
	})
	alice := &models.Agent{Name: "alice", Kind: models.KindHuman, Roles: []string{models.RoleLead}}
	must(t, h.svc.Agents.CreateAgent(h.ctx, models.System, alice, ""))
	must(t, forges.MapUser(h.ctx, h.boss, "origin", "alice-forge", alice.Name))
	must(t, forges.MapUser(h.ctx, h.boss, "origin", "fixer-bot", fixer.Name))
	r.sync, err = forgesync.New(forgesync.Config{Service: h.svc, Forges: forges, Workspaces: h.cfg.Workspaces,
		BaseURL: "http://countersign.test", Interval: 150 * time.Millisecond, PollEvery: poll, Log: h.cfg.Log})
	must(t, err)
	must(t, r.sync.Start(h.ctx))
	t.Cleanup(func() { _ = r.sync.Stop(h.ctx) })
	// The webhook endpoint's contract: 401 for a bad signature, 409 for a replay.
	r.hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, err := r.sync.Deliver(req.Context(), strings.TrimPrefix(req.URL.Path, "/"), req)
		switch models.ErrorCode(err) {
		case "":
			w.WriteHeader(http.StatusAccepted)
		case models.EUNAUTHORIZED:
			w.WriteHeader(http.StatusUnauthorized)
		case models.ECONFLICT:
			w.WriteHeader(http.StatusConflict)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(r.hook.Close)
	return r
}

// webhook sends p signed with secret and returns the status.
func (r *forgeRig) webhook(secret string, p forgetest.Payload) int {
	return forgetest.SendWebhook(r.h.t, r.hook.URL+"/origin", secret, r.srv.Kind(), p)
}

func (r *forgeRig) pull() forgetest.PullState {
	var got forgetest.PullState
	r.h.waitLong(time.Minute, "a pull request", func() bool {
		pulls := r.srv.Pulls()
		if len(pulls) > 1 {
			r.h.t.Fatalf("%d pull requests, want one: %+v", len(pulls), pulls)
		}
		if len(pulls) == 1 {
			got = pulls[0]
		}
		return len(pulls) == 1
	})
	return got
}

// status waits until the latest countersign/verified status on sha is want.
func (r *forgeRig) status(sha string, want forge.State) forgetest.StatusRecord {
	r.h.t.Helper()
	var got forgetest.StatusRecord
	r.h.waitLong(time.Minute, "status "+string(want)+" on "+short(sha), func() bool {
		st, ok := r.srv.LatestStatus(sha, forge.StatusContext)
		got = st
		return ok && forgeState(st.State) == want
	})
	return got
}

func forgeState(s string) forge.State {
	if s == "failed" {
		return forge.StateFailure
	}
	return forge.State(s)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func (r *forgeRig) task() *models.Task {
	return r.h.task("Fix Add in calc.go", "developer", contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "Add adds", Command: `grep -q 'a + b' calc.go`}}},
	}, func(s *models.TaskSpec) { s.Verify = models.RoleLead })
}

func (r *forgeRig) state(id int64, want models.TaskState) *models.Task {
	r.h.t.Helper()
	var got *models.Task
	r.h.waitLong(2*time.Minute, "task "+itoa(id)+" "+string(want), func() bool {
		tk, err := r.h.db.GetTask(r.h.ctx, id)
		must(r.h.t, err)
		got = tk
		return tk.State == want
	})
	return got
}

// tokenNowhere asserts the forge token is in no worker output or log file, no
// Countersign log line, no event, and no task as the API returns it.
func (r *forgeRig) tokenNowhere(id int64) {
	t := r.h.t
	for _, a := range r.h.attempts(id) {
		if strings.Contains(a.OutputTail, r.token) {
			t.Errorf("attempt %d's output holds the token", a.Number)
		}
		if a.LogPath != "" {
			b, err := os.ReadFile(a.LogPath)
			must(t, err)
			if !strings.Contains(string(b), "TASK_COMPLETE") {
				t.Errorf("attempt %d's log does not hold the worker's output: the hunt proves nothing", a.Number)
			}
			if strings.Contains(string(b), r.token) {
				t.Errorf("attempt %d's log (the worker's view) holds the token", a.Number)
			}
		}
	}
	if strings.Contains(r.logs.String(), r.token) {
		t.Errorf("Countersign's log holds the token")
	}
	evs, err := r.h.db.ListEvents(r.h.ctx, 0, 10000)
	must(t, err)
	all, _ := json.Marshal(evs)
	if strings.Contains(string(all), r.token) || strings.Contains(string(all), r.secret) {
		t.Errorf("an event holds the token or the webhook secret")
	}
	tk, err := r.h.db.GetTask(r.h.ctx, id)
	must(t, err)
	js, _ := json.Marshal(tk)
	if strings.Contains(string(js), r.token) {
		t.Errorf("the task's JSON holds the token")
	}
	for _, p := range r.srv.Pulls() {
		if strings.Contains(p.Body, r.token) {
			t.Errorf("the pull request's description holds the token")
		}
	}
}

// eventCount is how many events there are.
func (r *forgeRig) eventCount() int {
	evs, err := r.h.db.ListEvents(r.h.ctx, 0, 10000)
	must(r.h.t, err)
	return len(evs)
}

func readAll(t *testing.T, rc io.ReadCloser) string {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	must(t, err)
	return string(b)
}
