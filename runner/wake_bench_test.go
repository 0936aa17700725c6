package runner

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/jackc/pgx/v5"
)

// BenchmarkWakeUps runs 160 sleep-bound tasks (0.1 s each) created at 40 a second on
// two and four pools sharing one PostgreSQL, each pool with its own store (its own
// LISTEN connection and connection pool, as runner processes have), before
// (woken by every commit, a settle transaction per attempt) and after (work-ready
// wake-ups with a claim turn, batched settles), each on a fresh database. It reports
// per task: the database's committed transactions (pg_stat_database.xact_commit,
// the tasks' creation included), the runner process's CPU (the pools in this
// process; the PostgreSQL backends' CPU is not included), claim and settle
// transactions. Run with -benchtime 1x.
func BenchmarkWakeUps(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, before := range []bool{true, false} {
			name := fmt.Sprintf("runners=%d/after", n)
			if before {
				name = fmt.Sprintf("runners=%d/before", n)
			}
			b.Run(name, func(b *testing.B) { benchWakeUps(b, n, before) })
		}
	}
}

func benchWakeUps(b *testing.B, runners int, before bool) {
	const tasks, rate = 160, 40
	url := storetest.URL(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, store.Config{DatabaseURL: url})
	must(b, err)
	b.Cleanup(func() { db.Close() })
	svc := models.NewService(db, ledger.Composer{})
	boss := &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	must(b, svc.Agents.CreateAgent(ctx, models.System, boss, ""))
	for i := range 4 {
		must(b, svc.Agents.CreateAgent(ctx, boss, &models.Agent{Name: fmt.Sprintf("w%d", i), Kind: models.KindWorker,
			Roles: []string{"developer"}, Command: "cat >/dev/null; sleep 0.1", Concurrency: 4}, ""))
	}
	obs := &benchObserver{finished: make(chan string, tasks*2)}
	pools := startPools(b, ctx, url, runners, before, func(c *Config) { c.Observer, c.Poll = obs, DefaultPoll })
	settles := func() (n int64) {
		for _, p := range pools {
			n += p.run.settling.batches.txs.Load()
		}
		return n
	}
	stats, err := pgx.Connect(ctx, url)
	must(b, err)
	b.Cleanup(func() { stats.Close(context.Background()) })
	xacts := func() int64 {
		time.Sleep(1500 * time.Millisecond) // backends report their counts when idle, within a second
		var n int64
		must(b, stats.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n))
		return n
	}
	x0, c0, s0, cpu0, t0 := xacts(), claims(pools), settles(), cpuTime(), time.Now()
	b.ResetTimer()
	tick := time.NewTicker(time.Second / rate)
	for i := range tasks {
		<-tick.C
		_, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: fmt.Sprintf("t%d", i), Role: "developer", Contract: noopContract()})
		must(b, err)
	}
	tick.Stop()
	for range tasks {
		select {
		case o := <-obs.finished:
			if o != models.OutcomePassed {
				b.Fatalf("outcome %s", o)
			}
		case <-ctx.Done():
			b.Fatal("tasks did not finish")
		}
	}
	wall := time.Since(t0)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	x := xacts() - x0
	b.ReportMetric(float64(x)/tasks, "xact/task")
	b.ReportMetric(float64(cpu.Microseconds())/1000/tasks, "cpu_ms/task")
	b.ReportMetric(float64(claims(pools)-c0)/tasks, "claims/task")
	b.ReportMetric(float64(settles()-s0)/tasks, "settle_tx/task")
	b.ReportMetric(tasks/wall.Seconds(), "tasks/s")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	b.ReportMetric(percentile(obs.latencies, 0.5), "dispatch_p50_ms")
	b.ReportMetric(percentile(obs.latencies, 0.99), "dispatch_p99_ms")
	b.ReportMetric(percentile(obs.latencies, 1), "dispatch_max_ms")
}

// cpuTime is the CPU this process used so far (its children, the workers, not
// included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
