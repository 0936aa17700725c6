//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Classic BPF opcodes used by the filter.
const (
	bpfLdAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfAnd    = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRet    = unix.BPF_RET | unix.BPF_K
	offNr     = 0
	offArch   = 4
	offArg0   = 16
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	denyEACCE = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	// A protocol we refuse looks like one the kernel lacks, so that programs that
	// try Multipath TCP first (Go's listeners do) fall back to plain TCP.
	denyProto = unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)
)

// insn is one filter instruction whose jumps name labels, resolved by assemble.
type insn struct {
	code   uint16
	k      uint32
	jt, jf string // labels; "" means the next instruction
	label  string // this instruction's own label
}

// assemble resolves the labels into relative jump offsets.
func assemble(prog []insn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(i int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		j, ok := at[label]
		if !ok || j <= i || j-i-1 > 255 {
			return 0, fmt.Errorf("bad jump from %d to %q", i, label)
		}
		return uint8(j - i - 1), nil
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		jt, err := off(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(i, in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// socketFilter refuses the sockets Landlock's rules do not see: any family but unix
// (only when allowUnix), IPv4/IPv6 and routing netlink; within IPv4/IPv6 any type but
// stream and datagram, and any protocol but the default, TCP, UDP and ICMP ping —
// so no Multipath TCP, SCTP, raw or packet socket. It refuses TCP Fast Open (the
// MSG_FASTOPEN flag of sendto, sendmsg and sendmmsg), which connects without
// connect(2), and io_uring, whose operations create and connect sockets without the
// socket(2) system call.
func socketFilter(allowUnix bool) []insn {
	unixVerdict := denyEACCE
	if allowUnix {
		unixVerdict = retAllow
	}
	prog := []insn{
		{code: bpfLdAbs, k: offArch},
		{code: bpfJeq, k: auditArch, jf: "kill"},
		{code: bpfLdAbs, k: offNr},
	}
	if syscallLimit != 0 {
		// x32 system calls reach the same kernel code under other numbers.
		prog = append(prog, insn{code: bpfJge, k: syscallLimit, jt: "deny"})
	}
	prog = append(prog,
		insn{code: bpfJeq, k: unix.SYS_SOCKET, jt: "socket"},
		insn{code: bpfJeq, k: unix.SYS_SENDTO, jt: "flags3"},
		insn{code: bpfJeq, k: unix.SYS_SENDMMSG, jt: "flags3"},
		insn{code: bpfJeq, k: unix.SYS_SENDMSG, jt: "flags2"},
		insn{code: bpfJeq, k: unix.SYS_IO_URING_SETUP, jt: "deny"},
		insn{code: bpfRet, k: retAllow},

		insn{label: "socket", code: bpfLdAbs, k: offArg0},
		insn{code: bpfJeq, k: unix.AF_UNIX, jt: "unix"},
		insn{code: bpfJeq, k: unix.AF_INET, jt: "inet"},
		insn{code: bpfJeq, k: unix.AF_INET6, jt: "inet"},
		insn{code: bpfJeq, k: unix.AF_NETLINK, jt: "netlink"},
		insn{code: bpfRet, k: denyEACCE},

		insn{label: "unix", code: bpfRet, k: unixVerdict},

		insn{label: "inet", code: bpfLdAbs, k: offArg0 + 8},
		insn{code: bpfAnd, k: 0xf}, // the type without SOCK_NONBLOCK and SOCK_CLOEXEC
		insn{code: bpfJeq, k: unix.SOCK_STREAM, jt: "proto"},
		insn{code: bpfJeq, k: unix.SOCK_DGRAM, jt: "proto"},
		insn{code: bpfRet, k: denyEACCE},
		insn{label: "proto", code: bpfLdAbs, k: offArg0 + 16},
		insn{code: bpfJeq, k: 0, jt: "allow"},
		insn{code: bpfJeq, k: unix.IPPROTO_TCP, jt: "allow"},
		insn{code: bpfJeq, k: unix.IPPROTO_UDP, jt: "allow"},
		insn{code: bpfJeq, k: unix.IPPROTO_ICMP, jt: "allow"},
		insn{code: bpfJeq, k: unix.IPPROTO_ICMPV6, jt: "allow"},
		insn{code: bpfRet, k: denyProto},

		// TCP Fast Open connects inside sendto/sendmsg (MSG_FASTOPEN), past Landlock's
		// connect rule: a confined process reached PostgreSQL that way.
		insn{label: "flags3", code: bpfLdAbs, k: offArg0 + 24},
		insn{code: bpfAnd, k: unix.MSG_FASTOPEN},
		insn{code: bpfJeq, k: 0, jt: "allow", jf: "deny"},
		insn{label: "flags2", code: bpfLdAbs, k: offArg0 + 16},
		insn{code: bpfAnd, k: unix.MSG_FASTOPEN},
		insn{code: bpfJeq, k: 0, jt: "allow", jf: "deny"},

		insn{label: "netlink", code: bpfLdAbs, k: offArg0 + 16},
		insn{code: bpfJeq, k: unix.NETLINK_ROUTE, jt: "allow"},
		insn{code: bpfRet, k: denyEACCE},

		insn{label: "allow", code: bpfRet, k: retAllow},
		insn{label: "deny", code: bpfRet, k: denyEACCE},
		insn{label: "kill", code: bpfRet, k: retKill},
	)
	return prog
}

// installSeccomp loads the socket filter on the calling thread only (no TSYNC): the
// thread's children inherit it, the rest of the runner does not.
func installSeccomp(allowUnix bool) error {
	filter, err := assemble(socketFilter(allowUnix))
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
