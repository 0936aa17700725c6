package runner

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/workspace"
)

// harness is a store, a service, a lead/exec/admin person and a pool (not started).
type harness struct {
	t    testing.TB
	ctx  context.Context
	db   *store.DB
	svc  *models.Service
	boss *models.Agent
	root string
	cfg  Config
	pool *Pool
	obs  *recorder
}

// testGoCache is the go command's own build cache, warm from building the tests: the
// judge's shared build cache in tests (read-only under each judged run's layer; only
// the judge's compile-only warm-up writes it), so judged Go runs do not start cold.
var testGoCache = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// testCfg is the configuration tests start from: short leases and backoffs.
func testCfg() Config {
	return Config{
		JudgeGoCache:     testGoCache(),
		RunnerID:         "test-runner",
		Lease:            3 * time.Second,
		Poll:             200 * time.Millisecond,
		Grace:            2 * time.Second,
		KillGrace:        200 * time.Millisecond,
		MaxInfraFailures: 3,
		InfraBackoff:     10 * time.Millisecond,
		MaxInfraBackoff:  50 * time.Millisecond,
	}
}

func newHarness(t testing.TB, dialect string, mut func(*Config)) *harness {
	t.Helper()
	// Every harness signs attestations, as serve and runner do, so that every
	// end-to-end test settles through the signing composer.
	signer, err := attest.LoadOrCreateKey(t.TempDir())
	must(t, err)
	return newHarnessOn(t, storetest.Open(t, dialect), ledger.Composer{Signer: signer}, mut)
}

// newHarnessOn is newHarness over an open store, its ledger entries built by composer.
func newHarnessOn(t testing.TB, db *store.DB, composer ledger.Composer, mut func(*Config)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	svc := models.NewService(db, composer)
	boss := &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	must(t, svc.Agents.CreateAgent(ctx, models.System, boss, ""))
	// No project-wide criteria: each test names the checks it wants.
	must(t, svc.Templates.SaveRules(ctx, boss, &models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{"unit-test": "true", "failing": "exit 4"}}}))
	root := t.TempDir()
	ws, err := workspace.New(filepath.Join(root, "work"))
	must(t, err)
	h := &harness{t: t, ctx: ctx, db: db, svc: svc, boss: boss, root: root, obs: &recorder{}}
	h.cfg = testCfg()
	h.cfg.Service, h.cfg.Workspaces, h.cfg.Observer = svc, ws, h.obs
	if !testing.Verbose() {
		h.cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if mut != nil {
		mut(&h.cfg)
	}
	return h
}

// start creates and starts the pool, stopped when the test ends.
func (h *harness) start() *Pool {
	h.t.Helper()
	p, err := New(h.cfg)
	must(h.t, err)
	must(h.t, p.Start(h.ctx))
	h.pool = p
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			h.t.Errorf("stop: %v", err)
		}
	})
	return p
}

// script returns the command running testdata/name with args (test-controlled, so
// safe to quote into the admin-defined command).
func script(t testing.TB, name string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", name))
	must(t, err)
	parts := []string{"sh", shq(abs)}
	for _, a := range args {
		parts = append(parts, shq(a))
	}
	return strings.Join(parts, " ")
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// worker adds a worker agent.
func (h *harness) worker(name, role, command string, mut ...func(*models.Agent)) *models.Agent {
	h.t.Helper()
	a := &models.Agent{Name: name, Kind: models.KindWorker, Roles: []string{role}, Command: command}
	for _, m := range mut {
		m(a)
	}
	must(h.t, h.svc.Agents.CreateAgent(h.ctx, h.boss, a, ""))
	return a
}

// fileContract is a file contract with min_length 100 and done token TASK_COMPLETE.
func fileContract() contract.Contract {
	return contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MinLength: 100, DoneToken: "TASK_COMPLETE"},
		Verification: contract.Verification{Type: contract.VerifyVerifiable},
	}
}

// task creates a task.
func (h *harness) task(title, role string, c contract.Contract, mut ...func(*models.TaskSpec)) *models.Task {
	h.t.Helper()
	spec := models.TaskSpec{Title: title, Brief: "Do the thing called " + title + ".", Role: role, Contract: c}
	for _, m := range mut {
		m(&spec)
	}
	t, err := h.svc.Tasks.CreateTask(h.ctx, h.boss, spec)
	must(h.t, err)
	return t
}

// wait polls task id until its state is one of states.
func (h *harness) wait(id int64, states ...models.TaskState) *models.Task {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		t, err := h.db.GetTask(h.ctx, id)
		must(h.t, err)
		if slices.Contains(states, t.State) {
			return t
		}
		if time.Now().After(deadline) {
			atts, _ := h.db.ListAttempts(h.ctx, id)
			h.t.Fatalf("task %d is %s, want %v; attempts: %+v", id, t.State, states, atts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	h.waitLong(30*time.Second, what, cond)
}

// waitLong polls until cond holds, for at most d.
func (h *harness) waitLong(d time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) attempts(id int64) []models.Attempt {
	h.t.Helper()
	a, err := h.db.ListAttempts(h.ctx, id)
	must(h.t, err)
	return a
}

// ledgerTypes lists the types of the ledger entries about task id.
func (h *harness) ledgerTypes(id int64) []string {
	h.t.Helper()
	entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{Limit: 1000})
	must(h.t, err)
	var out []string
	for _, e := range entries {
		if e.TaskID != nil && *e.TaskID == id {
			out = append(out, e.Type)
		}
	}
	return out
}

// blockedPayload returns the open blocked inbox item's payload of task id.
func (h *harness) blockedPayload(id int64) models.BlockedPayload {
	h.t.Helper()
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: id, Kind: models.InboxBlocked})
	must(h.t, err)
	if len(items) != 1 {
		h.t.Fatalf("task %d has %d blocked inbox items, want 1", id, len(items))
	}
	var p models.BlockedPayload
	must(h.t, json.Unmarshal(items[0].Payload, &p))
	return p
}

// brief reads the brief file of attempt n of task id.
func (h *harness) brief(id int64, n int) string {
	h.t.Helper()
	ws := &workspace.Workspace{MetaDir: filepath.Join(h.cfg.Workspaces.Root(), "meta", itoa(id))}
	b, err := os.ReadFile(ws.BriefPath(n))
	must(h.t, err)
	return string(b)
}

// events lists the types of events about task id, oldest first.
func (h *harness) events(id int64) []string {
	h.t.Helper()
	evs, err := h.db.ListEvents(h.ctx, 0, 1000)
	must(h.t, err)
	var out []string
	for _, e := range evs {
		if e.TaskID != nil && *e.TaskID == id {
			out = append(out, e.Type)
		}
	}
	return out
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	latencies []time.Duration
	outcomes  []string
}

func (r *recorder) Dispatched(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, d)
}

func (r *recorder) AttemptFinished(outcome, stage string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, outcome+"/"+stage)
}

func (r *recorder) count() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.latencies), len(r.outcomes)
}

// commandEvaluator returns an evaluator running testdata/name.
func commandEvaluator(t *testing.T, name string) evaluator.Evaluator {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", name))
	must(t, err)
	ev, err := evaluator.NewCommand([]string{"sh", abs}, 10*time.Second)
	must(t, err)
	return ev
}

// dialects returns the dialects to run on: both, unless -short.
func dialects() []string {
	if testing.Short() {
		return []string{store.DialectSQLite}
	}
	return storetest.Dialects()
}

// settled waits at most d for task id to end verified or blocked, and returns it.
func (h *harness) settled(id int64, d time.Duration) *models.Task {
	h.t.Helper()
	var got *models.Task
	h.waitLong(d, "task "+itoa(id)+" to settle", func() bool {
		tk, err := h.db.GetTask(h.ctx, id)
		must(h.t, err)
		got = tk
		return tk.State == models.TaskVerified || tk.State == models.TaskBlocked
	})
	return got
}
