// Package sandbox confines every process the runner starts in a task's workspace — the
// worker, the verify commands that run the worker's code, git, reviewers, evaluator
// commands — so that the judged cannot reach the judge: the database, the data dir,
// other workspaces, the server's process, PostgreSQL.
//
// On Linux a run is confined by the OS thread that starts it. A fresh thread, locked
// to its goroutine and never given back to the Go scheduler, confines itself (a private
// mount namespace that masks /run, /var/run and /tmp, no_new_privs, an empty capability
// set, a Landlock ruleset, a seccomp filter) and then forks the command, which inherits
// all of it: nothing runs unconfined between fork and exec, and no other goroutine ever
// runs on that thread (the Go runtime creates new threads from a clean template thread
// when the current one is locked). The thread stays alive until the command exits,
// because the command's parent-death signal (SIGKILL) is tied to it: when the runner
// dies, the command dies with it.
//
// Where the runner holds CAP_SYS_ADMIN the thread also gives its children a PID
// namespace of their own (unshare(CLONE_NEWPID) affects only the calling thread's
// future children), so the command is PID 1 of a fresh namespace and, when it exits or
// is killed, the kernel SIGKILLs every process left in it and reports the command's exit
// only once they are all gone: a process that left the command's process group
// (setsid, a double fork) dies with the run all the same. Without CAP_SYS_ADMIN the
// command is cloned (CLONE_NEWUSER|CLONE_NEWPID: unshare(CLONE_NEWUSER) is refused to a
// threaded process) into a user namespace of its own, which needs no capability, and a
// PID namespace that namespace owns: the same guarantee. It has no id maps (the
// confined thread may not write /proc/<pid>/uid_map), so a run sees itself and every
// file as the overflow id, nobody; the kernel checks its real ids as before, and with
// no root mapped its exec gains no capability in the namespace. Where the kernel
// refuses user namespaces too (user.max_user_namespaces=0, an AppArmor or seccomp
// profile), the sandbox is unavailable and says why: the runner refuses to judge
// rather than let a process that escaped a run's group change the work while it is
// checked. KillsEscapees says whether runs get either. /proc is not remounted: a
// confined process sees the host's /proc (read-only, as before) and its own pid there
// as the host numbers it.
//
// A run whose Policy has a Network gets a network namespace of its own, where the
// runner holds CAP_SYS_ADMIN: the confining thread unshares one (CLONE_NEWNET, like
// every namespace, belongs to the thread and applies at once), raises its lo and
// listens on 127.0.0.1:<port> in it for each port the Network names, all before it
// drops its capabilities; the command it forks inherits the namespace, not the
// listeners. The listeners go to the caller (NetworkPolicy.OnListen), which serves or
// forwards their connections from any goroutine (a socket stays in the namespace it
// was made in), and are closed when the run ends, which frees the namespace. The run
// then reaches those ports and nothing else: no other port or host, no UDP or DNS
// out, no IPv6 out, no abstract unix socket of the host (they belong to a namespace),
// no interface but lo for a raw or packet socket; Landlock's connect rules are
// narrowed to the same ports. Pathname unix sockets belong to no network namespace:
// the seccomp filter and the masked /run, /var/run and /tmp keep those out as before.
// A runner without CAP_SYS_ADMIN cannot make such a namespace (unshare and setns are
// refused it, and a run cloned into a user and network namespace of its own has lo
// down and no capability to raise it: TestNetworkWithoutCapSysAdmin measures each),
// so NetworkIsolation says so and Start refuses a Network (ErrNoNetworkIsolation);
// root of a user namespace of its own (unshare --user --map-root-user) is enough. A
// private network adds 1.0-1.5 ms to a confined start (BenchmarkNetworkNamespaceCost,
// median paired difference, against 8-12 ms starts at a load average of 12), most of
// it the kernel building the namespace. docs/network-confinement.md has the design,
// the measurements and how the runner wires it.
//
// Why a confining thread rather than a re-exec shim: `countersign version` takes 14 ms
// to start (package initialisation of its dependencies; /bin/true takes 0.8 ms),
// against a budget of one millisecond per attempt for the whole sandbox. Confining a
// thread costs a thread, a ruleset and a few system calls: 0.3-0.4 ms per process
// (BenchmarkStart here, BenchmarkRunNoopConfined in runner/worker). The PID namespace
// adds an unshare (3 µs) and its teardown when the command exits: too little to tell
// from noise on a loaded 2-vCPU machine where a start takes 3-15 ms
// (BenchmarkPIDNamespaceCost pairs starts with and without one; 11-39 µs median
// paired difference, 300 pairs three times, at a load average of 87). The user
// namespace costs more: 1.2-1.6 ms per start (BenchmarkUserNamespaceCost, the same
// way: 3.0-3.8 ms against 1.7-2.1 ms), mostly because Go cannot vfork a clone into a
// new user namespace and copies the runner's page tables instead, so it grows with the
// runner's memory.
//
// The package knows nothing of tasks: the runner builds a Policy per run.
package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Mode says whether runs are confined.
type Mode string

// The modes. ModeOn refuses to run anything when the kernel cannot confine it; ModeOff
// runs everything unconfined and must be chosen explicitly by an admin.
const (
	ModeOn  Mode = "on"
	ModeOff Mode = "off"
)

// ParseMode reads a --sandbox value.
func ParseMode(s string) (Mode, error) {
	switch Mode(strings.ToLower(strings.TrimSpace(s))) {
	case "", ModeOn:
		return ModeOn, nil
	case ModeOff:
		return ModeOff, nil
	}
	return "", fmt.Errorf("sandbox: mode %q is neither on nor off", s)
}

// Policy is what one confined run may touch. Paths must be absolute; those that do not
// exist are skipped (a Landlock rule needs an open file).
type Policy struct {
	// ReadExec are hierarchies the run may read and execute from.
	ReadExec []string
	// ReadWrite are hierarchies the run may read, write, create in and execute from:
	// the workspace, its private temp dir, its agent's home.
	ReadWrite []string
	// ConnectTCP are the only TCP ports the run may connect to (any host), where the
	// kernel's Landlock has network rules (ABI 4 and later).
	ConnectTCP []uint16
	// AllowUnix lets the run create AF_UNIX sockets; without it socket(AF_UNIX) fails
	// (socketpair, which makes unnamed pairs, still works).
	AllowUnix bool
	// Network, when set, gives the run a network namespace of its own in which it
	// reaches only the loopback ports Network names, served by the caller (see
	// NetworkPolicy). Nil: the run shares the runner's network, limited only by
	// ConnectTCP. Ignored with the sandbox off; Start refuses it where
	// NetworkIsolation is false.
	Network *NetworkPolicy
}

// Normalize cleans the paths, drops duplicates and sorts ports, so equal policies
// compare and print alike.
func (p Policy) Normalize() Policy {
	clean := func(in []string) []string {
		out := make([]string, 0, len(in))
		for _, s := range in {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, filepath.Clean(s))
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	p.ReadExec, p.ReadWrite = clean(p.ReadExec), clean(p.ReadWrite)
	p.ConnectTCP = slices.Clone(p.ConnectTCP)
	slices.Sort(p.ConnectTCP)
	p.ConnectTCP = slices.Compact(p.ConnectTCP)
	p.Network = p.Network.normalize()
	return p
}

// Validate rejects a policy that would confine nothing or that names a relative path.
func (p Policy) Validate() error {
	for _, s := range append(slices.Clone(p.ReadExec), p.ReadWrite...) {
		if !filepath.IsAbs(s) {
			return fmt.Errorf("sandbox: path %q is not absolute", s)
		}
		if strings.ContainsRune(s, 0) {
			return errors.New("sandbox: path contains NUL")
		}
	}
	for _, s := range p.ReadWrite {
		if filepath.Clean(s) == "/" {
			return errors.New("sandbox: the root directory cannot be writable")
		}
	}
	return p.Network.validate()
}

// Describe lists the policy in plain words, one line per grant, for the agent page and
// the logs.
func (p Policy) Describe() []string {
	p = p.Normalize()
	var lines []string
	for _, s := range p.ReadWrite {
		lines = append(lines, "read, write and execute "+s)
	}
	for _, s := range p.ReadExec {
		lines = append(lines, "read and execute "+s)
	}
	if p.Network != nil {
		lines = append(lines, p.Network.describe())
	} else if len(p.ConnectTCP) == 0 {
		lines = append(lines, "connect to no TCP port")
	} else {
		ports := make([]string, len(p.ConnectTCP))
		for i, port := range p.ConnectTCP {
			ports[i] = fmt.Sprint(port)
		}
		lines = append(lines, "connect over TCP to ports "+strings.Join(ports, ", "))
	}
	if p.AllowUnix {
		lines = append(lines, "open unix sockets (pathname sockets under /run, /var/run and /tmp stay hidden)")
	} else {
		lines = append(lines, "open no unix socket")
	}
	return lines
}

// MinABI is the oldest Landlock ABI the sandbox accepts: 4 brought TCP connect rules
// (without them a worker reaches PostgreSQL), 6 scoped signals and abstract unix
// sockets (without them a worker of the runner's uid signals the runner).
const MinABI = 6

// ErrUnavailable is returned by Start when the sandbox is on but the kernel cannot
// confine a run; Status says why.
var ErrUnavailable = errors.New("sandbox: confinement unavailable")

// Sandbox starts commands confined by a Policy. Build one with Probe; it is safe for
// concurrent use.
type Sandbox struct {
	mode     Mode
	abi      int      // Landlock ABI version, 0 when none
	reason   string   // why confinement is unavailable; empty when available
	root     bool     // holds CAP_SYS_ADMIN: mount namespaces can be made
	pidns    bool     // each confined run gets a PID namespace (root, and the kernel allows it)
	nopidns  string   // why not, when root and the kernel refused one
	userns   bool     // without pidns: each run is cloned into a user and a PID namespace
	nouserns string   // why not, when the kernel refused one
	netns    bool     // a run with a Network policy gets a network namespace (root, and the kernel allows it)
	nonetns  string   // why not, when root and the kernel refused one
	netOnly  bool     // tests only: confine with the network namespace alone, to show what it stops by itself
	caps     bool     // holds any capability: confined processes must drop them
	private  []string // hierarchies no grant may reach (the data dir), resolved
	grants   resolver // resolved grants, for narrowing them around private
	lastCap  int      // highest capability number the kernel knows
}

// Mode returns the mode the sandbox was probed with.
func (s *Sandbox) Mode() Mode { return s.mode }

// ABI returns the kernel's Landlock ABI version (0 when it has none).
func (s *Sandbox) ABI() int { return s.abi }

// Enabled reports whether runs are confined.
func (s *Sandbox) Enabled() bool { return s.mode == ModeOn }

// Ready reports whether commands may be started: the sandbox is off, or it is on and
// the kernel can confine them.
func (s *Sandbox) Ready() bool { return s.mode == ModeOff || s.reason == "" }

// KillsEscapees reports whether every process a run starts dies when the run's
// command does, including processes that left its process group (setsid, a double
// fork): true when runs are confined in a PID namespace of their own — made directly
// where the runner holds CAP_SYS_ADMIN, inside a user namespace of the run's own where
// it does not. Then, once the command has been waited for (for worker.Run: once Run
// returns), no process of the run is left. A sandbox that is on and ready always
// kills escapees; false means the sandbox is off (a run is only a process group: a
// process that leaves it outlives the run, until the runner restarts) or unavailable.
func (s *Sandbox) KillsEscapees() bool {
	return s.mode == ModeOn && s.reason == "" && (s.pidns || s.userns)
}

// Status says in one line what confines runs, or why nothing can, for /readyz, the
// dashboard banner and the start-up log.
func (s *Sandbox) Status() string {
	switch {
	case s.mode == ModeOff:
		return "sandbox off: workers, verify commands, git and evaluator commands run unconfined with the runner's own rights (--sandbox=off)"
	case s.reason != "":
		return "sandbox unavailable, workers do not start: " + s.reason + " (an admin may start with --sandbox=off)"
	}
	parts := []string{fmt.Sprintf("Landlock ABI %d", s.abi), "seccomp socket filter", "no_new_privs"}
	if s.caps {
		parts = append(parts, "no capabilities")
	}
	if s.root {
		parts = append(parts, "/run, /var/run and /tmp masked for agents allowed unix sockets")
	} else {
		parts = append(parts, "no agent may be allowed unix sockets (no CAP_SYS_ADMIN for a mount namespace)")
	}
	switch {
	case s.pidns:
		parts = append(parts, "a PID namespace per run (processes that leave a run's process group die with it)")
	case s.userns:
		parts = append(parts, "a user namespace with a PID namespace per run (no CAP_SYS_ADMIN; processes that leave a run's process group die with it)")
	default: // not ready: Probe gives a reason
		parts = append(parts, "processes that leave a run's process group (setsid) outlive it")
	}
	if s.netns {
		parts = append(parts, "a private network namespace for runs that ask for one")
	} else {
		parts = append(parts, "no private network namespace (runs reach their granted ports on any host)")
	}
	return "sandbox on: " + strings.Join(parts, ", ")
}

// Protect names hierarchies no confined run may reach whatever its policy grants —
// the data dir, with the database and every other task's workspace — and returns s.
// A grant that contains one is narrowed (Policy.Excluding); grants inside it stay.
// Call it before the sandbox is used.
func (s *Sandbox) Protect(dirs ...string) *Sandbox {
	for _, d := range dirs {
		real := realPath(d)
		if real == "" { // not there yet: as named, made absolute
			real, _ = filepath.Abs(d)
		}
		s.private = append(s.private, filepath.Clean(real))
	}
	return s
}

// Start starts cmd confined by p and returns once it has started (or failed to). Then,
// on the same OS thread, it calls whileRunning, which must return only once the command
// has exited: the command's parent-death signal is tied to that thread, so the thread
// must outlive it. whileRunning is not called when Start fails.
//
// cmd.SysProcAttr is set by Start (a process group of its own, the parent-death
// signal); set nothing in it beforehand. With the sandbox off the command starts
// unconfined the same way, and p.Network is ignored.
//
// With p.Network the command runs in a network namespace of its own; Start hands each
// of its listeners to p.Network.OnListen, on the calling goroutine, after the command
// has started and before returning, and closes them once whileRunning has returned.
// It fails with ErrNoNetworkIsolation where NetworkIsolation is false.
//
// When KillsEscapees, the command is PID 1 of its own PID namespace (and, without
// CAP_SYS_ADMIN, runs as nobody in a user namespace of its own), which changes what
// it sees and what reaches it: getpid() is 1; orphans of the run are reparented to it
// (and stay zombies until it exits if it never reaps them); a signal for which it has no
// handler is dropped — from the runner too, except SIGKILL and SIGSTOP — so a SIGTERM
// to its group reaches its children but not a command that leaves SIGTERM at its
// default, and that command ends only with SIGKILL; and when it exits, every process
// still in its namespace gets SIGKILL at once. Its exit is reported (cmd.Wait returns)
// only after they are all gone; a process stuck in uninterruptible sleep delays it.
func (s *Sandbox) Start(cmd *exec.Cmd, p Policy, whileRunning func()) error {
	if s.mode == ModeOn && s.reason != "" {
		return fmt.Errorf("%w: %s", ErrUnavailable, s.reason)
	}
	if s.mode == ModeOn {
		if err := p.Validate(); err != nil {
			return err
		}
		if ok, why := s.NetworkIsolation(); p.Network != nil && !ok {
			return fmt.Errorf("%w: %s", ErrNoNetworkIsolation, why)
		}
		for _, d := range s.private {
			p = p.excluding(d, s.grants.resolve)
		}
	}
	return s.start(cmd, p, whileRunning)
}
