//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// syscallLimit is __X32_SYSCALL_BIT: numbers from it up are x32 system calls.
	syscallLimit = 0x40000000
)
