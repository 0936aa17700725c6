package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// killLoad sizes TestKillNineUnderLoad for CI: 16 worker slots, tasks of 0.5 s, four
// runners, twenty kills two seconds apart after eight seconds of steady load.
const (
	killRunners  = 4
	killAgents   = 4
	killSlots    = 4 // per agent
	killTaskSecs = "0.5"
	killCount    = 20
	killEvery    = 2 * time.Second
	killWarmup   = 8 * time.Second
	// killLateRestart is how long half the killed runners stay dead: their tasks are
	// taken over by the others once the dead one is silent (three beats), the other
	// half by the same runner restarted at once.
	killLateRestart = 4 * time.Second
	// slowTakeover is a takeover far beyond the design (silence of three beats plus
	// one beat, about 4 s): such attempts are named in the log, since a lease that
	// merely expired (30 s) points at a takeover path that did not fire.
	slowTakeover = 10 * time.Second
)

// kill is one kill -9 of the runner named id.
type kill struct {
	id string
	at time.Time // SIGKILL sent: takeovers are timed from here
	// dead is when the test saw the process reaped. A killed process is dead only
	// once every one of its threads has left the kernel, and under load that lags
	// the signal by hundreds of milliseconds (a runner thread waits for a CPU to
	// die). Workers get their parent-death SIGKILL as their starting thread exits,
	// so until dead a worker may legitimately finish: its completion is judged
	// against dead, not at.
	dead time.Time
	late bool // restarted killLateRestart after, not at once
}

// killFleet is the four runner processes, each restarted in its own data dir under
// its own id.
type killFleet struct {
	t    *testing.T
	url  string
	dirs map[string]string
	mu   sync.Mutex
	proc map[string]*runnerProc
}

func (f *killFleet) start(id string) {
	p := startRunnerIn(f.t, f.url, id, f.dirs[id])
	f.mu.Lock()
	f.proc[id] = p
	f.mu.Unlock()
}

// kill9 kills id's process with SIGKILL and waits for it, returning when the signal
// was sent and when the process was seen dead (reaped: all its threads gone).
func (f *killFleet) kill9(id string) (at, dead time.Time) {
	f.mu.Lock()
	p := f.proc[id]
	f.mu.Unlock()
	at = time.Now()
	must(f.t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.cmd.Wait()
	return at, time.Now()
}

// TestKillNineUnderLoad: four `countersign runner` processes on PostgreSQL under
// load, with the default lease; one of them is killed with SIGKILL twenty times,
// half restarted at once under the same id (it takes its tasks back at once), half
// after four seconds (the others take its tasks once it is silent). Nothing is lost,
// nothing runs twice, no two attempts of a task overlap (neither the workers — a lock
// each holds while it runs — nor the attempt records), no worker completes after its
// runner died (reaped, which under load lags the SIGKILL), every verified task has
// one ledger entry, and the median takeover is within five seconds of the kill. It
// prints the takeover times and the throughput before and during the kills.
func TestKillNineUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills runners for a minute")
	}
	url, db, svc, boss, ctx := pgService(t)
	shared := filepath.Join(t.TempDir(), "runs")
	must(t, os.MkdirAll(shared, 0o700))
	for i := range killAgents {
		a := &models.Agent{Name: fmt.Sprintf("w%d", i), Kind: models.KindWorker, Roles: []string{"developer"}, Concurrency: killSlots,
			Command: script(t, "killload.sh", killTaskSecs, shared), Sandbox: scriptSandbox(t, filepath.Join(shared, "x"))}
		must(t, svc.Agents.CreateAgent(ctx, boss, a, ""))
	}
	countersignBinary(t) // built before the clock starts
	f := &killFleet{t: t, url: url, dirs: map[string]string{}, proc: map[string]*runnerProc{}}
	for i := range killRunners {
		id := fmt.Sprintf("k%d", i)
		f.dirs[id] = t.TempDir()
	}
	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan int)
	go func() { fed <- feedTasks(feedCtx, t, db, svc, boss, 3*killAgents*killSlots) }()
	for id := range f.dirs {
		f.start(id)
	}
	kills := f.killRepeatedly(ctx)
	stopFeed()
	n := <-fed
	waitVerified(t, ctx, db, n, 2*time.Minute)
	for id, p := range f.proc {
		p.stop(t)
		delete(f.proc, id)
	}
	checkKillRun(t, ctx, db, shared, n, kills)
}

// killRepeatedly lets the fleet warm up, then kills killCount times, a runner in
// turn, restarting each under its id at once or after killLateRestart (alternately).
func (f *killFleet) killRepeatedly(ctx context.Context) []kill {
	time.Sleep(killWarmup)
	var kills []kill
	var restarts sync.WaitGroup
	for i := range killCount {
		k := kill{id: fmt.Sprintf("k%d", i%killRunners), late: i%2 == 1}
		k.at, k.dead = f.kill9(k.id)
		kills = append(kills, k)
		if k.late {
			restarts.Add(1)
			go func() {
				defer restarts.Done()
				time.Sleep(killLateRestart)
				f.start(k.id)
			}()
		} else {
			f.start(k.id)
		}
		time.Sleep(killEvery - time.Since(k.at))
	}
	restarts.Wait()
	return kills
}

// feedTasks keeps about backlog tasks pending until ctx ends, and returns how many
// it created.
func feedTasks(ctx context.Context, t *testing.T, db *store.DB, svc *models.Service, boss *models.Agent, backlog int) int {
	n := 0
	for ctx.Err() == nil {
		counts, err := db.CountTasks(context.WithoutCancel(ctx), 0)
		if err != nil {
			t.Error(err)
			return n
		}
		for range backlog - counts[models.TaskPending] {
			_, err := svc.Tasks.CreateTask(context.WithoutCancel(ctx), boss, models.TaskSpec{Title: fmt.Sprintf("load %d", n),
				Role: "developer", Contract: noneContract()})
			if err != nil {
				t.Error(err)
				return n
			}
			n++
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return n
}

// waitVerified waits until n tasks are verified, failing if any ends otherwise.
func waitVerified(t *testing.T, ctx context.Context, db *store.DB, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		counts, err := db.CountTasks(ctx, 0)
		must(t, err)
		if counts[models.TaskVerified] == n {
			return
		}
		if counts[models.TaskBlocked] > 0 || counts[models.TaskCancelled] > 0 || time.Now().After(deadline) {
			t.Fatalf("want %d verified, have %v", n, counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkKillRun checks what TestKillNineUnderLoad promises of its n tasks, and prints
// the takeover times and the throughput before and during the kills.
func checkKillRun(t *testing.T, ctx context.Context, db *store.DB, shared string, n int, kills []kill) {
	t.Helper()
	tasks := allTasks(t, ctx, db)
	if len(tasks) != n {
		t.Fatalf("%d tasks, %d created", len(tasks), n)
	}
	runs := readCompletions(t, filepath.Join(shared, "runs.txt"))
	if b, err := os.ReadFile(filepath.Join(shared, "overlaps.txt")); err == nil {
		t.Errorf("attempts of a task ran at once (task, attempt):\n%s", b)
	}
	ledger := ledgerCounts(t, ctx, db)
	var st takeovers
	var verified []time.Time
	redone := 0
	for _, tk := range tasks {
		if tk.State != models.TaskVerified || tk.AttemptsUsed != 0 || ledger[tk.ID] != 1 {
			t.Errorf("task %d: %s, %d attempts used, %d ledger entries", tk.ID, tk.State, tk.AttemptsUsed, ledger[tk.ID])
		}
		verified = append(verified, *tk.VerifiedAt)
		atts, err := db.ListAttempts(ctx, tk.ID)
		must(t, err)
		redone += checkAttempts(t, tk.ID, atts, runs[tk.ID], kills, &st)
	}
	t.Logf("%d tasks redone: their worker had finished, but its runner was killed before recording the result", redone)
	t.Logf("%d workers completed after their runner's SIGKILL but before its death", st.dying)
	reportKillRun(t, kills, st.fast, st.late, verified)
}

// takeovers is what checkAttempts gathers over all tasks: the takeover times by the
// kind of kill, and how many workers completed between a SIGKILL and the death.
type takeovers struct {
	fast, late []time.Duration
	dying      int
}

// checkAttempts checks task id's attempts and its workers' completions (attempt →
// when): every attempt but the last was taken over from a killed runner, ending
// before the next began; each attempt's worker completed at most once, and only the
// last attempt's and those whose runner died after the completion but before
// recording it (died, not was signalled: see kill.dead). It gathers the takeover
// times and the completions between a kill's signal and death into st, and reports
// whether the task's work was redone.
func checkAttempts(t *testing.T, id int64, atts []models.Attempt, done map[int]time.Time, kills []kill, st *takeovers) int {
	t.Helper()
	last := atts[len(atts)-1]
	if last.Outcome != models.OutcomePassed {
		t.Errorf("task %d: last attempt %s", id, last.Outcome)
	}
	if _, ok := done[last.Number]; !ok {
		t.Errorf("task %d: the passed attempt %d's worker never completed", id, last.Number)
	}
	for i, a := range atts[:len(atts)-1] {
		if a.Outcome != models.OutcomeInfra || a.FinishedAt == nil || atts[i+1].StartedAt.Before(*a.FinishedAt) {
			t.Errorf("task %d: attempt %d (%s, finished %v) overlaps or precedes attempt %d (started %v)",
				id, a.Number, a.Outcome, a.FinishedAt, atts[i+1].Number, atts[i+1].StartedAt)
			continue
		}
		d, k := takeoverTime(a, kills)
		if k == nil {
			t.Errorf("task %d: attempt %d ended %q with no kill of %s under it", id, a.Number, a.Diagnosis, a.RunnerID)
			continue
		}
		if d > slowTakeover {
			t.Logf("task %d: attempt %d of %s (started %v) taken over %v after the kill (restarted late: %v)",
				id, a.Number, a.RunnerID, a.StartedAt.Format(time.StampMilli), d, k.late)
		}
		if k.late {
			st.late = append(st.late, d)
		} else {
			st.fast = append(st.fast, d)
		}
		when, ok := done[a.Number]
		switch {
		case !ok || when.Before(k.at):
		case !when.Before(k.dead):
			t.Errorf("task %d: attempt %d's worker completed %v after its runner died (%v after the SIGKILL)",
				id, a.Number, when.Sub(k.dead), when.Sub(k.at))
		default:
			st.dying++
		}
	}
	if len(done) > 1 {
		return 1
	}
	return 0
}

// readCompletions reads the "<task id> <attempt> <unix ns>" lines killload.sh
// appends, failing on an attempt that completed twice.
func readCompletions(t *testing.T, path string) map[int64]map[int]time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	out := map[int64]map[int]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var id, ns int64
		var n int
		if _, err := fmt.Sscan(line, &id, &n, &ns); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		if out[id] == nil {
			out[id] = map[int]time.Time{}
		}
		if _, twice := out[id][n]; twice {
			t.Errorf("task %d attempt %d: the worker completed twice", id, n)
		}
		out[id][n] = time.Unix(0, ns)
	}
	return out
}

// takeoverTime finds the kill under attempt a — the first kill of its runner after
// it started: the process that ran it died then — and returns the time from the kill
// to the takeover that ended a.
func takeoverTime(a models.Attempt, kills []kill) (time.Duration, *kill) {
	if a.FinishedAt == nil {
		return 0, nil
	}
	for i := range kills {
		k := &kills[i]
		if k.id == a.RunnerID && k.at.After(a.StartedAt) && !k.at.After(*a.FinishedAt) {
			return a.FinishedAt.Sub(k.at), k
		}
	}
	return 0, nil
}

// reportKillRun prints the takeover times (median, worst) of the two kinds of kill
// and the throughput before and during the kills, and fails when the median takeover
// exceeds five seconds.
func reportKillRun(t *testing.T, kills []kill, fast, late []time.Duration, verified []time.Time) {
	t.Helper()
	all := append(slices.Clone(fast), late...)
	if len(all) == 0 {
		t.Fatal("no attempt was taken over: the killed runners were idle")
	}
	first, last := kills[0].at, kills[len(kills)-1].at.Add(killLateRestart)
	slices.SortFunc(verified, func(a, b time.Time) int { return a.Compare(b) })
	start := verified[0]
	var before, during int
	for _, v := range verified {
		switch {
		case v.Before(first):
			before++
		case v.Before(last):
			during++
		}
	}
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	rb, rd := rate(before, first.Sub(start)), rate(during, last.Sub(first))
	var lags []time.Duration
	for _, k := range kills {
		lags = append(lags, k.dead.Sub(k.at))
	}
	t.Logf("kill -9 to the runner's death (all threads gone): median %v, worst %v", median(lags), slices.Max(lags))
	t.Logf("takeover after kill -9 (default lease %v): median %v, worst %v over %d attempts; restarted at once: median %v (%d); restarted late: median %v (%d)",
		DefaultLease, median(all), slices.Max(all), len(all), median(fast), len(fast), median(late), len(late))
	t.Logf("throughput: %.1f tasks/s before the kills, %.1f during them (%.2f×), %d kills, %d tasks",
		rb, rd, rd/rb, len(kills), len(verified))
	if m := median(all); m > 5*time.Second {
		t.Errorf("median takeover %v, want at most 5s", m)
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// allTasks lists every task, paging through the list.
func allTasks(t *testing.T, ctx context.Context, db *store.DB) []models.Task {
	t.Helper()
	var out []models.Task
	for after := int64(0); ; {
		page, err := db.ListTasks(ctx, models.TaskFilter{Limit: 1000, AfterID: after})
		must(t, err)
		out = append(out, page...)
		if len(page) < 1000 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// ledgerCounts counts the ledger entries of each task.
func ledgerCounts(t *testing.T, ctx context.Context, db *store.DB) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for after := int64(0); ; {
		page, err := db.ListLedger(ctx, models.LedgerFilter{Limit: 1000, AfterID: after})
		must(t, err)
		for _, e := range page {
			if e.TaskID != nil {
				out[*e.TaskID]++
			}
		}
		if len(page) < 1000 {
			return out
		}
		after = page[len(page)-1].ID
	}
}
