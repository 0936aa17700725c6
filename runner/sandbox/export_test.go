//go:build linux && (amd64 || arm64)

package sandbox

// WithoutMountNamespace returns a copy of s as a runner without CAP_SYS_ADMIN has it.
func WithoutMountNamespace(s *Sandbox) *Sandbox {
	c := *s
	c.root = false
	return &c
}
