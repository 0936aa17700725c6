// Package proctest holds test helpers about processes, shared by the runner's packages
// that start commands.
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"
)

// WantGone fails t when pid still runs two seconds from now (a kill takes effect
// asynchronously), and then kills it so that it cannot outlive the test. A zombie
// counts as gone: it is dead, and reaping it is its new parent's business. what names
// the command pid should have died with, for the message.
func WantGone(t testing.TB, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		// The state letter follows the command name, which is in parentheses and may
		// itself contain ") ".
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d outlived %s", pid, what)
			return
		}
	}
}
