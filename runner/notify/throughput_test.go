package notify_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/notify"
	"github.com/countersign/countersign/runner/workspace"
)

// Runner throughput beside webhooks. Each task's worker leaves no output file, so
// its one attempt fails and the task is blocked: every task makes a task.blocked
// notification. Compared in one process, alternating, with the dispatcher running as
// serve runs it: no webhook; a webhook whose endpoint answers 204 at once; and one
// whose endpoint accepts connections and never answers (a black hole; each delivery
// waits out its 2 s timeout).
//
//	go test -run '^$' -bench RunnerThroughput -benchtime 60x ./runner/notify/

// finished counts finished attempts.
type finished struct{ n atomic.Int64 }

func (f *finished) Dispatched(time.Duration)          {}
func (f *finished) AttemptFinished(outcome, _ string) { f.n.Add(1) }

// blockingContract asks for a file the no-op worker never writes, with one attempt.
func blockingContract() contract.Contract {
	return contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out-{task_id}.md", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifySkip}}
}

// poolRun runs n blocking tasks through a fresh pool (4 workers of concurrency 4) on a
// fresh database and returns tasks per second and the deliveries made; hole, when set,
// is a webhook endpoint for every notification, and timeout bounds each delivery
// attempt.
func poolRun(tb testing.TB, dialect string, n int, hole string, timeout time.Duration) (float64, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := storetest.Open(tb, dialect)
	defer db.Close() // now, not when the benchmark ends: PostgreSQL's connections are few
	svc := models.NewService(db, ledger.Composer{})
	boss := &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	must(tb, svc.Agents.CreateAgent(ctx, models.System, boss, ""))
	must(tb, svc.Templates.SaveRules(ctx, boss, &models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{"unit-test": "true"}}}))
	if hole != "" {
		hooks, err := models.NewWebhooks(svc)
		must(tb, err)
		_, err = hooks.Create(ctx, boss, &models.Webhook{Name: "hole", URL: hole, Events: slices.Clone(models.HookNames)})
		must(tb, err)
	}
	d, err := notify.New(notify.Config{Store: db, BaseURL: "http://countersign.test", Timeout: timeout})
	must(tb, err)
	must(tb, d.Start(ctx))
	defer func() {
		// Deliveries still in flight are cancelled after a second: a black hole would
		// hold them for the whole timeout.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = d.Stop(sctx)
	}()
	for i := range 4 {
		a := &models.Agent{Name: "w" + strconv.Itoa(i), Kind: models.KindWorker, Roles: []string{"developer"}, Command: "cat >/dev/null", Concurrency: 4}
		must(tb, svc.Agents.CreateAgent(ctx, boss, a, ""))
	}
	for i := range n {
		_, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: "t" + strconv.Itoa(i), Role: "developer", Contract: blockingContract()})
		must(tb, err)
	}
	ws, err := workspace.New(filepath.Join(tb.TempDir(), "work"))
	must(tb, err)
	obs := &finished{}
	cfg := runner.Config{Service: svc, Workspaces: ws, Observer: obs, RunnerID: "bench", Lease: 30 * time.Second, Poll: time.Second,
		Grace: 2 * time.Second, KillGrace: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p, err := runner.New(cfg)
	must(tb, err)
	start := time.Now()
	must(tb, p.Start(ctx))
	for obs.n.Load() < int64(n) {
		if ctx.Err() != nil {
			tb.Fatalf("only %d of %d attempts finished", obs.n.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	must(tb, p.Stop(sctx))
	pending := 0
	if hole != "" {
		hooks, err := db.ListWebhooks(ctx)
		must(tb, err)
		ds, err := db.ListWebhookDeliveries(ctx, hooks[0].ID, 1000)
		must(tb, err)
		pending = len(ds)
	}
	return float64(n) / elapsed.Seconds(), pending
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// okEndpoint answers every delivery 204 at once.
func okEndpoint(tb testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/hook"
}

// TestRunnerDoesNotWaitOnABlackHole: every task finishes while every webhook delivery
// hangs. The endpoint accepts connections and never answers, and an attempt's timeout
// is an hour, far beyond the test's three minutes: a runner that waited on any
// delivery would not finish its tasks, so this fails if notifying ever joins the
// task's path. Each blocked task still leaves its delivery in the outbox, written in
// the task's own transaction. The throughput figures are the benchmark's below.
func TestRunnerDoesNotWaitOnABlackHole(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel()
	const n = 48
	_, made := poolRun(t, store.DialectSQLite, n, blackHole(t), time.Hour)
	if made != n {
		t.Errorf("%d deliveries made for %d blocked tasks", made, n)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRunnerThroughput reports tasks/s with no webhook, with one answering at
// once and with a black hole (the median of three alternating runs each), and black
// hole / answering, per dialect.
func BenchmarkRunnerThroughput(b *testing.B) {
	hole, ok := blackHole(b), okEndpoint(b)
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			var nones, lives, deads []float64
			for i := 0; i < 3; i++ {
				r, _ := poolRun(b, d, b.N, "", 2*time.Second)
				nones = append(nones, r)
				r, _ = poolRun(b, d, b.N, ok, 2*time.Second)
				lives = append(lives, r)
				r, _ = poolRun(b, d, b.N, hole, 2*time.Second)
				deads = append(deads, r)
			}
			b.Logf("tasks/s per run: no webhook %.1f, answering %.1f, black hole %.1f", nones, lives, deads)
			none, live, dead := median(nones), median(lives), median(deads)
			b.ReportMetric(none, "tasks/s_no_webhook")
			b.ReportMetric(live, "tasks/s_answering")
			b.ReportMetric(dead, "tasks/s_black_hole")
			b.ReportMetric(dead/live, "hole/answering")
			b.ReportMetric(dead/none, "hole/none")
		})
	}
}
