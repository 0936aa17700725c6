package worker

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// awaitExit blocks until the leader has exited but leaves it unreaped (waitid with
// WNOWAIT). A zombie keeps its pid, and so its process group id, reserved: Run can
// signal -pgid one last time after the exit without any chance of hitting a group
// that reused the number. The returned func reaps it.
func awaitExit(cmd *exec.Cmd) (reap func() error) {
	const pPID = 1     // idtype_t P_PID
	var info [128]byte // siginfo_t; contents unused
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			break
		}
	}
	return cmd.Wait
}
