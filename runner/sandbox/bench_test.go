//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"net"
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
// Confined as a runner without CAP_SYS_ADMIN, runs get a user namespace with a PID
// namespace in it instead of a PID namespace alone; "process-group-only" is a run with
// neither.
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
		{"process-group-only", sandbox.ProcessGroupOnly(sandbox.Probe(sandbox.ModeOn)), p},
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
	pairCost(b, with, sandbox.ProcessGroupOnly(with), "pidns")
}

// BenchmarkUserNamespaceCost is what a runner without CAP_SYS_ADMIN pays for killing
// escapees: a run cloned into a user namespace with a PID namespace in it, against
// the same run as only a process group, measured in pairs as BenchmarkPIDNamespaceCost
// does ("userns-µs" is the median paired difference).
func BenchmarkUserNamespaceCost(b *testing.B) {
	with := sandbox.WithoutCapSysAdmin(sandbox.Probe(sandbox.ModeOn))
	if !with.KillsEscapees() {
		b.Skipf("the kernel gives runs no user namespace here: %s", with.Status())
	}
	pairCost(b, with, sandbox.ProcessGroupOnly(with), "userns")
}

// BenchmarkNetworkNamespaceCost is what a private network costs a confined start:
// /bin/true confined with a Network of three served ports (a namespace, lo raised,
// three listeners handed over and closed when the run ends) against the same run
// without a Network (ConnectTCP of the same three ports), in alternating pairs as
// BenchmarkPIDNamespaceCost does ("netns-µs" is the median paired difference). The
// kernel frees a network namespace later, in a work queue (cleanup_net), so part of
// its cost falls outside the pair: ns/op over many pairs still includes it.
//
//	go test -run '^$' -bench BenchmarkNetworkNamespaceCost -benchtime 300x -count 3 ./runner/sandbox/
func BenchmarkNetworkNamespaceCost(b *testing.B) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if ok, why := sb.NetworkIsolation(); !ok {
		b.Skip(why)
	}
	served := &sandbox.NetworkPolicy{Ports: []uint16{80, 443, 8080}, OnListen: func(uint16, net.Listener) {}}
	pairCostOf(b, sb, sb, "netns", served)
}

// pairCost times starting and reaping /bin/true confined by with and by without, in
// alternating pairs, and reports the medians of each and of the differences (name-µs).
func pairCost(b *testing.B, with, without *sandbox.Sandbox, name string) {
	pairCostOf(b, with, without, name, nil)
}

// pairCostOf is pairCost with network added to the policy of the runs under with.
func pairCostOf(b *testing.B, with, without *sandbox.Sandbox, name string, network *sandbox.NetworkPolicy) {
	ws := filepath.Join(b.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), ReadWrite: []string{ws}, ConnectTCP: []uint16{80, 443, 8080}}
	withP := p
	withP.Network = network
	once := func(sb *sandbox.Sandbox, p sandbox.Policy) time.Duration {
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
			a, c = once(with, withP), once(without, p)
		} else {
			c, a = once(without, p), once(with, withP)
		}
		ns, plain, diff = append(ns, us(a)), append(plain, us(c)), append(diff, us(a)-us(c))
	}
	b.ReportMetric(median(ns), "with-"+name+"-µs")
	b.ReportMetric(median(plain), "without-µs")
	b.ReportMetric(median(diff), name+"-µs")
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
