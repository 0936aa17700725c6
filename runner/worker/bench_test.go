package worker

import (
	"context"
	"github.com/countersign/countersign/runner/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkRunNoop measures Run's overhead on the cheapest command; compare it with
// BenchmarkBareForkExec to see what the process group, pipe and supervision cost.
func BenchmarkRunNoop(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := Run(ctx, Spec{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunNoopConfined is BenchmarkRunNoop confined as the runner confines a
// worker: a workspace, temp dir and home writable, the system readable, three ports.
// Its difference to BenchmarkRunNoop is what the sandbox costs a process.
func BenchmarkRunNoopConfined(b *testing.B) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		b.Skip(sb.Status())
	}
	dir := b.TempDir()
	c := &Confinement{Sandbox: sb, Policy: sandbox.Policy{
		ReadExec:   sandbox.SystemReadPaths(os.Getenv("PATH")),
		ReadWrite:  []string{dir},
		ConnectTCP: []uint16{80, 443, 8080},
	}}
	ctx := context.Background()
	for b.Loop() {
		if _, err := Run(ctx, Spec{Command: "true", Dir: dir, Confine: c}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunNoopWithLog is BenchmarkRunNoop with a log file, as the runner uses it.
func BenchmarkRunNoopWithLog(b *testing.B) {
	ctx := context.Background()
	log := filepath.Join(b.TempDir(), "attempt.log")
	for b.Loop() {
		if _, err := Run(ctx, Spec{Command: "true", LogPath: log}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareForkExec is the floor: os/exec starting /bin/true with nothing else.
func BenchmarkBareForkExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

const oneGB = 1_000_000_000

// peakSampler records the highest HeapInuse and Sys seen while it runs. ReadMemStats
// stops the world briefly; every 5 ms is enough to catch a buffer that grows with the
// output without distorting the throughput much.
type peakSampler struct {
	stop      chan struct{}
	wg        sync.WaitGroup
	heapInuse uint64
	sys       uint64
}

func startSampler() *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			p.heapInuse = max(p.heapInuse, ms.HeapInuse)
			p.sys = max(p.sys, ms.Sys)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) Stop() { close(p.stop); p.wg.Wait() }

// runOneGB runs a worker printing 1 GB to a log file and returns the result and the
// peak memory seen meanwhile.
func runOneGB(tb testing.TB) (Result, *peakSampler) {
	if os.Getenv("COUNTERSIGN_BENCH_1GB") != "1" {
		tb.Skip("set COUNTERSIGN_BENCH_1GB=1 to run the 1 GB output check")
	}
	log := filepath.Join(tb.TempDir(), "big.log")
	runtime.GC()
	p := startSampler()
	res, err := Run(context.Background(), Spec{Command: "head -c 1000000000 /dev/zero", LogPath: log})
	p.Stop()
	if err != nil {
		tb.Fatal(err)
	}
	if res.ExitCode != 0 || res.OutputBytes != oneGB || len(res.Tail) != DefaultTailBytes {
		tb.Fatalf("exit %d, %d bytes, tail %d", res.ExitCode, res.OutputBytes, len(res.Tail))
	}
	if fi, err := os.Stat(log); err != nil || fi.Size() != oneGB {
		tb.Fatalf("log: %v, %v", fi, err)
	}
	return res, p
}

// BenchmarkOneGigabyte reports throughput and peak memory for 1 GB of output. Run with
// COUNTERSIGN_BENCH_1GB=1 go test -run '^$' -bench OneGigabyte -benchtime 1x.
func BenchmarkOneGigabyte(b *testing.B) {
	for b.Loop() {
		res, p := runOneGB(b)
		b.ReportMetric(float64(oneGB)/1e6/res.Duration.Seconds(), "MB/s")
		b.ReportMetric(float64(p.heapInuse)/(1<<20), "peak-heap-inuse-MiB")
		b.ReportMetric(float64(p.sys)/(1<<20), "peak-sys-MiB")
	}
}

// TestPeakMemory1GB fails if memory grows with the output: the heap must stay within a
// few buffers' worth while a worker prints 1 GB.
func TestPeakMemory1GB(t *testing.T) {
	res, p := runOneGB(t)
	t.Logf("1 GB in %v (%.0f MB/s), peak HeapInuse %.1f MiB, peak Sys %.1f MiB",
		res.Duration, float64(oneGB)/1e6/res.Duration.Seconds(),
		float64(p.heapInuse)/(1<<20), float64(p.sys)/(1<<20))
	if p.heapInuse > 32<<20 {
		t.Fatalf("peak HeapInuse %d bytes: memory is not flat", p.heapInuse)
	}
}
