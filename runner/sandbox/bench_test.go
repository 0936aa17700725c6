//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

// BenchmarkStart times starting and reaping /bin/true through the sandbox, confined
// (with and without the mount namespace an agent that may open unix sockets gets) and
// off; the difference is what confinement costs an attempt per process it starts.
// Confined as a runner without CAP_SYS_ADMIN, runs get no PID namespace: the
// difference to confined (when the benchmark runs as root) is what one costs.
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), ReadWrite: []string{ws}, ConnectTCP: []uint16{80, 443, 8080}}
	unixP := p
	unixP.AllowUnix = true
	for _, bc := range []struct {
		name string
		sb   *sandbox.Sandbox
		p    sandbox.Policy
	}{
		{"off", sandbox.Probe(sandbox.ModeOff), p},
		{"confined", sandbox.Probe(sandbox.ModeOn), p},
		{"confined+unix", sandbox.Probe(sandbox.ModeOn), unixP},
		{"confined-without-CAP_SYS_ADMIN", sandbox.WithoutCapSysAdmin(sandbox.Probe(sandbox.ModeOn)), p},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cmd := exec.Command("/bin/true")
				cmd.Dir = ws
				done := make(chan error, 1)
				if err := bc.sb.Start(cmd, bc.p, func() { done <- cmd.Wait() }); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPIDNamespaceCost is what a run's PID namespace adds to starting and reaping
// /bin/true confined, measured in pairs — each iteration starts one run with a
// namespace and one without, in alternating order — so that a machine whose load
// drifts (other builds, other tests) shifts both alike. It reports the medians of each
// and of the paired differences ("pidns-µs"); ns/op is the pair's.
func BenchmarkPIDNamespaceCost(b *testing.B) {
	with := sandbox.Probe(sandbox.ModeOn)
	if !with.KillsEscapees() {
		b.Skipf("runs get no PID namespace here: %s", with.Status())
	}
	without := sandbox.WithoutCapSysAdmin(with)
	ws := filepath.Join(b.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), ReadWrite: []string{ws}, ConnectTCP: []uint16{80, 443, 8080}}
	once := func(sb *sandbox.Sandbox) time.Duration {
		start := time.Now()
		cmd := exec.Command("/bin/true")
		cmd.Dir = ws
		done := make(chan error, 1)
		if err := sb.Start(cmd, p, func() { done <- cmd.Wait() }); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var ns, plain, diff []float64
	for i := 0; i < b.N; i++ {
		var a, c time.Duration
		if i%2 == 0 {
			a, c = once(with), once(without)
		} else {
			c, a = once(without), once(with)
		}
		ns, plain, diff = append(ns, us(a)), append(plain, us(c)), append(diff, us(a)-us(c))
	}
	b.ReportMetric(median(ns), "with-pidns-µs")
	b.ReportMetric(median(plain), "without-µs")
	b.ReportMetric(median(diff), "pidns-µs")
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}
