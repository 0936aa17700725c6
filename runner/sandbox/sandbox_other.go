//go:build !linux || !(amd64 || arm64)

package sandbox

import (
	"os/exec"
	"syscall"
)

// Probe reports that this platform cannot confine runs: only Linux on amd64 and arm64
// has Landlock and the seccomp filter this package installs.
func Probe(mode Mode) *Sandbox {
	s := &Sandbox{mode: mode}
	if mode == ModeOn {
		s.reason = "confinement needs Linux with Landlock"
	}
	return s
}

func (s *Sandbox) start(cmd *exec.Cmd, _ Policy, whileRunning func()) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go whileRunning()
	return nil
}
