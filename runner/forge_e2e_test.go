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
	"path/filepath"
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
// it can read — the test's whole temporary tree included, where the database that
// holds the token lives — so that a token within its reach ends up in its output.
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
	git(t, repo, "push", "-q", "--force", r.srv.BareDir(), "main")
	forges, err := models.NewForges(h.svc)
	must(t, err)
	cfg := r.srv.Config()
	r.forge = &models.Forge{Name: "origin", Kind: string(kind), BaseURL: cfg.BaseURL, Repo: cfg.Repo, Token: r.token}
	r.secret, err = forges.Create(h.ctx, h.boss, r.forge)
	must(t, err)
	fixer := h.worker("fixer", "developer", strings.ReplaceAll(forgeWorker, "$FORGE_HUNT", filepath.Dir(h.root)), func(a *models.Agent) {
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

// lastEvent is the newest event's id.
func (r *forgeRig) lastEvent() int64 {
	evs, err := r.h.db.ListEvents(r.h.ctx, 0, 10000)
	must(r.h.t, err)
	var last int64
	for _, e := range evs {
		last = max(last, e.ID)
	}
	return last
}

// reviewEventsSince lists the events after id that a review could cause: the task's
// own and the forge's review events (the sync's status rounds go on meanwhile).
func (r *forgeRig) reviewEventsSince(id int64) []string {
	evs, err := r.h.db.ListEvents(r.h.ctx, id, 10000)
	must(r.h.t, err)
	var out []string
	for _, e := range evs {
		if e.ID > id && (strings.HasPrefix(e.Type, "task.") || strings.HasPrefix(e.Type, "forge.review")) {
			out = append(out, e.Type)
		}
	}
	return out
}

func readAll(t testing.TB, rc io.ReadCloser) string {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	must(t, err)
	return string(b)
}

// TestForgePullRequestsOnGitHub and TestForgePullRequestsOnGitLab follow one task
// through its pull request, over webhooks on GitHub and by polling on GitLab: the
// verified commit is pushed with Countersign's token and opened as a pull request with
// its evidence; countersign/verified is pending while a lead's verification waits,
// success on exactly the verified commit once a mapped lead approves (the builder's own
// approval does not count), failure on a commit pushed afterwards; a request for
// changes sends the task back with the reviewer's words, which the next attempt's
// brief carries; the new verified commit replaces the old one on the branch; a merge
// in the forge is recorded on the task and removes its worktree. A delivery with a
// bad signature changes nothing, a replayed one is refused, and the token is in no
// worker's reach, log, event or description.
func TestForgePullRequestsOnGitHub(t *testing.T) { forgeFlow(t, forge.GitHub, -1) }

// TestForgePullRequestsOnGitLab is TestForgePullRequestsOnGitHub on GitLab.
func TestForgePullRequestsOnGitLab(t *testing.T) { forgeFlow(t, forge.GitLab, 200*time.Millisecond) }

func forgeFlow(t *testing.T, kind forge.Kind, poll time.Duration) {
	r := newForgeRig(t, kind, poll)
	h := r.h
	tk := r.task()
	h.start()
	done := r.state(tk.ID, models.TaskCompleted)
	first := done.Commit
	pr := r.pull()
	if pr.Head != done.Branch || pr.HeadSHA != first || pr.Base != "main" {
		t.Fatalf("pull request %+v, want head %s at the verified commit %s into main", pr, done.Branch, first)
	}
	for _, want := range []string{done.Contract.Hash(), "Judge's report", "| 1 | passed", "/tasks/" + itoa(tk.ID), "awaiting a person's verification"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the description lacks %q:\n%s", want, pr.Body)
		}
	}
	r.status(first, forge.StatePending)

	r.badSignatureChangesNothing(pr.Number, tk.ID)

	// The builder's own identity approving does not count.
	r.review(pr.Number, "fixer-bot", forge.ReviewApproved, "looks good to me")
	r.waitEvent(tk.ID, models.EventForgeReviewIgnored, "builder")
	if got, _ := h.db.GetTask(h.ctx, tk.ID); got.State != models.TaskCompleted {
		t.Fatalf("the builder's approval moved the task to %s", got.State)
	}
	// A mapped lead's approval verifies it: success on exactly the verified commit.
	r.review(pr.Number, "alice-forge", forge.ReviewApproved, "Approved.")
	r.state(tk.ID, models.TaskVerified)
	if st := r.status(first, forge.StateSuccess); !strings.HasSuffix(st.TargetURL, "/tasks/"+itoa(tk.ID)) {
		t.Errorf("the success status links to %q, want the task page", st.TargetURL)
	}
	r.h.waitLong(time.Minute, "the description to name the ledger entry", func() bool {
		body := r.pull().Body
		return strings.Contains(body, "`task.complete` entry") && strings.Contains(body, "/tasks/"+itoa(tk.ID)+"/attestation")
	})
	r.replayRefused(pr.Number)

	// A commit pushed after verification is failure; the verified one stays success.
	foreign := r.srv.PushCommit(done.Branch, "calc.go", "package calc\n\nfunc Add(a, b int) int { return 42 }\n")
	if kind == forge.GitHub {
		if code := r.webhook(r.secret, r.srv.HeadMovedPayload(pr.Number, "mallory", first)); code != http.StatusAccepted {
			t.Fatalf("head moved delivery: %d", code)
		}
	}
	r.status(foreign, forge.StateFailure)
	r.status(first, forge.StateSuccess)

	// Changes requested: the task goes back to its worker with the reviewer's words.
	words := "Please document Add with a doc comment."
	r.review(pr.Number, "alice-forge", forge.ReviewChangesRequested, words, forgetest.LineComment{Path: "calc.go", Line: 3, Text: "no doc comment here"})
	again := r.revised(tk.ID, first)
	if brief := h.brief(tk.ID, len(h.attempts(tk.ID))); !strings.Contains(brief, words) || !strings.Contains(brief, "calc.go:3: no doc comment here") {
		t.Errorf("the next attempt's brief lacks the reviewer's words or line comment:\n%s", brief)
	}
	if body := git(t, r.repo, "show", again.Commit+":calc.go"); !strings.Contains(body, "// Add adds.") {
		t.Errorf("the revision did not act on the review: %s", body)
	}
	r.status(first, forge.StateFailure)
	r.status(again.Commit, forge.StatePending)
	r.waitHead(again.Commit)
	r.review(pr.Number, "alice-forge", forge.ReviewApproved, "Thanks.")
	r.state(tk.ID, models.TaskVerified)
	r.status(again.Commit, forge.StateSuccess)

	r.mergedInForge(pr.Number, tk.ID)
	r.onlyVerifiedSucceeded(first, again.Commit)
	r.tokenNowhere(tk.ID)
}

// badSignatureChangesNothing sends a lead's approval signed with another secret: it is
// refused and records nothing.
func (r *forgeRig) badSignatureChangesNothing(number, id int64) {
	t := r.h.t
	before := r.lastEvent()
	if code := r.webhook("not-the-secret", r.srv.ReviewPayload(number, "alice-forge", forge.ReviewApproved, "LGTM")); code != http.StatusUnauthorized {
		t.Fatalf("a badly signed delivery: %d, want 401", code)
	}
	if got := r.reviewEventsSince(before); len(got) > 0 {
		t.Fatalf("a badly signed delivery recorded %v", got)
	}
	if got := r.state(id, models.TaskCompleted); got.VerifierID != nil {
		t.Fatalf("a badly signed approval verified the task")
	}
}

// mergedInForge merges the pull request in the forge: the merge is recorded on the
// task and its worktree goes.
func (r *forgeRig) mergedInForge(number, id int64) {
	r.srv.Merge(number, "alice-forge")
	if r.srv.Kind() == forge.GitHub {
		if code := r.webhook(r.secret, r.srv.MergePayload(number)); code != http.StatusAccepted {
			r.h.t.Fatalf("merge delivery: %d", code)
		}
	}
	r.waitEvent(id, models.EventTaskMerged, "forge")
	r.h.waitFor("the merged task's worktree to go", func() bool {
		_, err := os.Stat(filepath.Join(r.h.cfg.Workspaces.Root(), "worktrees", itoa(id)))
		return os.IsNotExist(err)
	})
}

// review submits a review on the forge, for the poll to find on GitLab, and delivers
// it by webhook on GitHub.
func (r *forgeRig) review(number int64, login string, state forge.ReviewState, body string, comments ...forgetest.LineComment) {
	r.h.t.Helper()
	r.srv.AddReview(number, login, state, body, comments...)
	if r.srv.Kind() == forge.GitHub {
		if code := r.webhook(r.secret, r.srv.ReviewPayload(number, login, state, body)); code != http.StatusAccepted {
			r.h.t.Fatalf("review delivery: %d", code)
		}
	}
}

// replayRefused sends one delivery twice: the second is refused.
func (r *forgeRig) replayRefused(number int64) {
	t := r.h.t
	req := forgetest.NewWebhookRequest(t, r.hook.URL+"/origin", r.secret, r.srv.Kind(), r.srv.ReviewPayload(number, "someone", forge.ReviewCommented, "a comment"))
	body := readAll(t, req.Body)
	var codes []int
	for range 2 {
		again, err := http.NewRequest(req.Method, req.URL.String(), strings.NewReader(body))
		must(t, err)
		again.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(again)
		must(t, err)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != http.StatusAccepted || codes[1] != http.StatusConflict {
		t.Fatalf("a delivery and its replay: %v, want [202 409]", codes)
	}
}

// revised waits for the task to be completed again with a commit other than old.
func (r *forgeRig) revised(id int64, old string) *models.Task {
	var got *models.Task
	r.h.waitLong(2*time.Minute, "task "+itoa(id)+" revised", func() bool {
		tk, err := r.h.db.GetTask(r.h.ctx, id)
		must(r.h.t, err)
		got = tk
		if tk.State == models.TaskBlocked {
			r.h.t.Fatalf("the revision blocked: %+v", r.h.attempts(id))
		}
		return tk.State == models.TaskCompleted && tk.Commit != "" && tk.Commit != old
	})
	return got
}

// waitHead waits until the pull request's head is sha.
func (r *forgeRig) waitHead(sha string) {
	r.h.waitLong(time.Minute, "the pull request's head at "+short(sha), func() bool { return r.pull().HeadSHA == sha })
}

// waitEvent waits for an event of type typ about task id whose data mentions word.
func (r *forgeRig) waitEvent(id int64, typ, word string) {
	r.h.waitLong(time.Minute, typ+" ("+word+")", func() bool {
		evs, err := r.h.db.ListEvents(r.h.ctx, 0, 10000)
		must(r.h.t, err)
		for _, e := range evs {
			if e.TaskID != nil && *e.TaskID == id && e.Type == typ && strings.Contains(string(e.Data), word) {
				return true
			}
		}
		return false
	})
}

// onlyVerifiedSucceeded asserts no commit but the verified ones ever got success.
func (r *forgeRig) onlyVerifiedSucceeded(verified ...string) {
	for _, req := range r.srv.Requests() {
		if req.Method != http.MethodPost || !strings.Contains(req.Path, "/statuses/") || !strings.Contains(req.Body, "success") {
			continue
		}
		ok := false
		for _, v := range verified {
			ok = ok || strings.Contains(req.Path, v)
		}
		if !ok {
			r.h.t.Errorf("success was set by %s %s, not on a verified commit", req.Method, req.Path)
		}
	}
}

// TestForgeChainIsOnePullRequest: two steps, the second built on the first's verified
// commit, are one pull request at the end of the chain, listing both; its status is
// success only while every step stands: reopening the first step turns it to failure,
// and it stays failure after the first step is verified again, since the pull
// request's commit holds the first step's old work.
func TestForgeChainIsOnePullRequest(t *testing.T) {
	r := newForgeRig(t, forge.GitHub, -1)
	h := r.h
	h.worker("documenter", "writer", `grep -q 'a + b' calc.go || exit 1; printf '// Add adds.\n' >> calc.go; echo TASK_COMPLETE`,
		func(a *models.Agent) { a.Workdir, a.Worktree, a.TargetBranch, a.Forge = r.repo, true, "main", "origin" })
	c := func(check string) contract.Contract {
		return contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable,
				Criteria: []contract.Criterion{{Activity: "check", Description: "it is there", Command: check}}}}
	}
	fix := h.task("Fix Add", "developer", c(`grep -q 'a + b' calc.go`))
	doc := h.task("Document Add", "writer", c(`grep -q 'Add adds' calc.go`), func(s *models.TaskSpec) { s.DependsOn = []int64{fix.ID} })
	h.start()
	r.state(fix.ID, models.TaskVerified)
	last := r.state(doc.ID, models.TaskVerified)
	pr := r.pull()
	if pr.Head != last.Branch || pr.HeadSHA != last.Commit {
		t.Fatalf("the chain's pull request is %s at %s, want the last step's %s at %s", pr.Head, short(pr.HeadSHA), last.Branch, short(last.Commit))
	}
	if !strings.Contains(pr.Body, "Steps in this pull request") || !strings.Contains(pr.Body, "/tasks/"+itoa(fix.ID)) {
		t.Errorf("the description does not list the first step:\n%s", pr.Body)
	}
	r.status(last.Commit, forge.StateSuccess)

	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, fix.ID, models.ActReopen, models.ActionInput{Reason: "redo it"})
	must(t, err)
	r.status(last.Commit, forge.StateFailure)
	r.state(fix.ID, models.TaskVerified)
	time.Sleep(500 * time.Millisecond) // a few sync rounds
	if st, _ := r.srv.LatestStatus(last.Commit, forge.StatusContext); forgeState(st.State) != forge.StateFailure {
		t.Fatalf("after the first step was verified again, the chain's commit is %s (%s), want failure", st.State, st.Description)
	}
	if n := len(r.srv.Pulls()); n != 1 {
		t.Fatalf("%d pull requests for one chain", n)
	}
}
