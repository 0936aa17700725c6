//go:build !linux

package worker

import "os/exec"

// awaitExit reaps the leader at once where waitid(WNOWAIT) is not available; the final
// group signal then carries the (tiny) risk of a reused group id.
func awaitExit(cmd *exec.Cmd) (reap func() error) {
	err := cmd.Wait()
	return func() error { return err }
}
