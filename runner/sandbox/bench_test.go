//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/runner/sandbox"
)

// BenchmarkStart times starting and reaping /bin/true through the sandbox, confined
// (with and without the mount namespace an agent that may open unix sockets gets) and
// off; the difference is what confinement costs an attempt per process it starts.
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
