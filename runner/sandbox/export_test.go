//go:build linux && (amd64 || arm64)

package sandbox

// WithoutCapSysAdmin returns a copy of s as a runner without CAP_SYS_ADMIN has it: no
// mount namespace, no PID namespace of its own making; runs get a user namespace with
// a PID namespace in it where the kernel allows one, and the sandbox is unavailable
// where it does not.
func WithoutCapSysAdmin(s *Sandbox) *Sandbox {
	c := &Sandbox{mode: s.mode, abi: s.abi, caps: s.caps, lastCap: s.lastCap, private: s.private}
	c.settle(true)
	return c
}

// WithoutUserNamespaces returns a copy of s as a runner without CAP_SYS_ADMIN has it
// on a kernel that refuses unprivileged user namespaces: never tried, so the sandbox
// is unavailable — the user-namespace path switched off.
func WithoutUserNamespaces(s *Sandbox) *Sandbox {
	c := &Sandbox{mode: s.mode, abi: s.abi, caps: s.caps, lastCap: s.lastCap, private: s.private}
	c.settle(false)
	return c
}

// ProcessGroupOnly returns a copy of s as a runner without CAP_SYS_ADMIN had it
// before runs got a user namespace: ready, each run only a process group — the
// defence switched off, for the tests that show an escapee then outlives its run.
func ProcessGroupOnly(s *Sandbox) *Sandbox {
	return &Sandbox{mode: s.mode, abi: s.abi, caps: s.caps, lastCap: s.lastCap, private: s.private}
}

// NetworkNamespaceOnly returns a copy of s whose runs with a Network are confined by
// their network namespace alone — no PID or mount namespace, no_new_privs, capability
// drop, Landlock or seccomp — so that a test shows what the namespace stops by itself.
func NetworkNamespaceOnly(s *Sandbox) *Sandbox {
	return &Sandbox{mode: s.mode, abi: s.abi, root: s.root, caps: s.caps, lastCap: s.lastCap, private: s.private, netns: s.netns, netOnly: true}
}
