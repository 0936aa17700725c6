// Benchmarks of the runner pool, on SQLite and PostgreSQL (COUNTERSIGN_TEST_POSTGRES,
// skipped when unreachable). Run them with:
//
//	go test -run '^$' -bench . -benchtime 200x ./runner/
//
// and the 1 GB one, which is guarded because it pushes a gigabyte through a pipe:
//
//	COUNTERSIGN_BENCH_1GB=1 go test -run '^$' -bench PeakMemory -benchtime 1x ./runner/
//
// Figures reported:
//   - BenchmarkDispatch: p50_ms / p99_ms of dispatch latency, from the task becoming
//     ready (committed by CreateTask) to its worker being started (Observer.Dispatched);
//     tasks are created one at a time, each after the previous one finished.
//   - BenchmarkOverhead: per_task_ms, the whole pool's time per no-op task run one at a
//     time (claim, workspace, brief, attempt row, worker, checks, outcome), next to
//     bare_ms, a bare fork/exec of the same no-op worker, and their ratio.
//   - BenchmarkThroughput: tasks/s with 4 agents of concurrency 4.
//   - BenchmarkPeakMemory1GB: peak_heap_MB and peak_sys_MB while a worker prints 1 GB.
package runner

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/procs"
	"github.com/countersign/countersign/runner/sandbox"
)

const noopCommand = "cat >/dev/null"

// noopContract asks for a clean exit and nothing else: no output file and, being of
// type skip in a project with no always-run activities, no verify commands. Each verify
// command is a fork/exec of its own (about as long as the worker's here), which is
// contract work rather than the runner's overhead.
func noopContract() contract.Contract {
	return contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}
}

// benchObserver signals every finished attempt.
type benchObserver struct {
	recorder
	finished chan string
}

func (o *benchObserver) AttemptFinished(outcome, stage string) {
	o.recorder.AttemptFinished(outcome, stage)
	o.finished <- outcome
}

func benchHarness(b *testing.B, dialect string, agents, concurrency int) (*harness, *benchObserver) {
	obs := &benchObserver{finished: make(chan string, 100000)}
	procs, err := procs.Open(b.TempDir())
	must(b, err)
	b.Cleanup(func() { procs.Close() })
	// As serve runs it: confined, every process group recorded, an attempt token per
	// attempt (no server need listen: the no-op worker never calls it).
	h := newHarness(b, dialect, func(c *Config) {
		c.Observer = obs
		c.Poll = time.Second
		c.Sandbox = sandbox.Probe(sandbox.ModeOn)
		c.Procs = procs
		c.APIURL = "http://127.0.0.1:9"
	})
	for i := range agents {
		h.worker("w"+itoa(int64(i)), "developer", noopCommand, func(a *models.Agent) { a.Concurrency = concurrency })
	}
	return h, obs
}

func percentile(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(float64(len(s)-1) * p)
	return float64(s[i]) / float64(time.Millisecond)
}

func forDialects(b *testing.B, fn func(b *testing.B, dialect string)) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) { fn(b, d) })
	}
}

func BenchmarkDispatch(b *testing.B) {
	forDialects(b, func(b *testing.B, d string) {
		h, obs := benchHarness(b, d, 1, 1)
		h.start()
		b.ResetTimer()
		for b.Loop() {
			h.task("noop", "developer", noopContract())
			if o := <-obs.finished; o != models.OutcomePassed {
				b.Fatalf("outcome %s", o)
			}
		}
		b.StopTimer()
		obs.mu.Lock()
		defer obs.mu.Unlock()
		b.ReportMetric(percentile(obs.latencies, 0.5), "p50_ms")
		b.ReportMetric(percentile(obs.latencies, 0.99), "p99_ms")
	})
}

func BenchmarkOverhead(b *testing.B) {
	forDialects(b, func(b *testing.B, d string) {
		h, obs := benchHarness(b, d, 1, 1)
		// Tasks exist before the clock starts: what is measured is the pool's work.
		var ids []int64
		for range b.N {
			ids = append(ids, h.task("noop", "developer", noopContract()).ID)
		}
		h.cfg.ClaimBatch = 1
		// The same number of bare runs, just before, under the same conditions.
		bare := bareForkExec(b, max(b.N, 50))
		b.ResetTimer()
		start := time.Now()
		h.start()
		for range ids {
			<-obs.finished
		}
		perTask := time.Since(start) / time.Duration(b.N)
		b.StopTimer()
		b.ReportMetric(float64(perTask)/float64(time.Millisecond), "per_task_ms")
		b.ReportMetric(float64(bare)/float64(time.Millisecond), "bare_ms")
		b.ReportMetric(float64(perTask)/float64(bare), "ratio")
	})
}

// bareForkExec times the same no-op worker started directly: /bin/sh -c, the brief on
// stdin, output to a file.
func bareForkExec(b *testing.B, n int) time.Duration {
	brief := strings.Repeat("brief line\n", 100)
	log := b.TempDir() + "/bare.log"
	start := time.Now()
	for range n {
		f, err := os.Create(log)
		must(b, err)
		cmd := exec.Command("/bin/sh", "-c", noopCommand)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(brief), f, f
		must(b, cmd.Run())
		f.Close()
	}
	return time.Since(start) / time.Duration(n)
}

func BenchmarkThroughput(b *testing.B) {
	forDialects(b, func(b *testing.B, d string) {
		h, obs := benchHarness(b, d, 4, 4)
		for range b.N {
			h.task("noop", "developer", noopContract())
		}
		b.ResetTimer()
		start := time.Now()
		h.start()
		for range b.N {
			<-obs.finished
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	})
}

func BenchmarkPeakMemory1GB(b *testing.B) {
	if os.Getenv("COUNTERSIGN_BENCH_1GB") != "1" {
		b.Skip("set COUNTERSIGN_BENCH_1GB=1 to push 1 GB through the pool")
	}
	forDialects(b, func(b *testing.B, d string) {
		h, obs := benchHarness(b, d, 0, 1)
		h.worker("big", "developer", script(b, "big.sh", "1024"))
		h.start()
		runtime.GC()
		var mu sync.Mutex
		var peakHeap, peakSys uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peakHeap, peakSys = max(peakHeap, ms.HeapInuse), max(peakSys, ms.Sys)
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		b.ResetTimer()
		for b.Loop() {
			h.task("print a gigabyte", "developer", noopContract())
			if o := <-obs.finished; o != models.OutcomePassed {
				b.Fatalf("outcome %s", o)
			}
		}
		b.StopTimer()
		close(stop)
		<-done
		b.ReportMetric(float64(peakHeap)/(1<<20), "peak_heap_MB")
		b.ReportMetric(float64(peakSys)/(1<<20), "peak_sys_MB")
	})
}
