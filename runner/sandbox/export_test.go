//go:build linux && (amd64 || arm64)

package sandbox

// WithoutMountNamespace returns a copy of s as a runner without CAP_SYS_ADMIN has it.
func WithoutMountNamespace(s *Sandbox) *Sandbox {
	return &Sandbox{mode: s.mode, abi: s.abi, reason: s.reason, caps: s.caps, lastCap: s.lastCap, private: s.private}
}
