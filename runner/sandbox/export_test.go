//go:build linux && (amd64 || arm64)

package sandbox

// WithoutCapSysAdmin returns a copy of s as a runner without CAP_SYS_ADMIN has it: no
// mount namespace, no PID namespace.
func WithoutCapSysAdmin(s *Sandbox) *Sandbox {
	return &Sandbox{mode: s.mode, abi: s.abi, reason: s.reason, caps: s.caps, lastCap: s.lastCap, private: s.private}
}
