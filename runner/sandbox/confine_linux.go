//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maskedDirs are the directories where pathname unix sockets live (PostgreSQL's,
// MySQL's, an X server's, tmux's). Landlock below ABI 9 does not restrict connect(2) on
// them, so a run that may open unix sockets gets an empty tmpfs over each.
var maskedDirs = []string{"/run", "/var/run", "/tmp"}

// The main goroutine keeps the main thread: a goroutine that locks itself to a thread
// and exits is normally given a fresh one that dies with it, but Go never destroys the
// main thread, so a confinement applied there would outlive its run and, worse, put
// the process's own thread group leader inside the sandbox (where a confined worker
// could signal it and read its /proc files).
func init() { runtime.LockOSThread() }

// Probe finds out what the kernel can confine and proves it by starting /bin/true
// confined. With mode off it checks nothing.
func Probe(mode Mode) *Sandbox {
	s := &Sandbox{mode: mode}
	if mode == ModeOff {
		return s
	}
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		s.reason = "the kernel has no Landlock (enable it at boot: lsm=landlock,...)"
		return s
	}
	s.abi = abi
	if abi < MinABI {
		// Below 4 no TCP rule keeps a worker from PostgreSQL; below 6 a worker of the
		// runner's uid may signal the runner and the database.
		s.reason = fmt.Sprintf("the kernel's Landlock ABI is %d; confinement needs %d (TCP connect rules from 4, scoped signals and abstract sockets from 6: Linux 6.12 or later)", abi, MinABI)
		return s
	}
	s.root = hasCapability(unix.CAP_SYS_ADMIN)
	s.caps = holdsAnyCapability()
	s.lastCap = lastCapability()
	s.settle(true)
	return s
}

// settle proves that confined runs start, each in a way that kills what it leaves
// behind: a PID namespace where the runner holds CAP_SYS_ADMIN, else a user namespace
// with a PID namespace in it (when tryUserNS). Where neither can be had the sandbox is
// unavailable and its reason says why: a process that leaves its run's process group
// (setsid, a double fork) would outlive the run and could change the workspace while
// the judge checks it, so the runner refuses to judge rather than judge that way.
func (s *Sandbox) settle(tryUserNS bool) {
	s.pidns, s.userns, s.reason = s.root, false, ""
	s.netns, s.nonetns = false, ""
	err := s.prove()
	if refused := (*pidNamespaceError)(nil); errors.As(err, &refused) {
		// CAP_SYS_ADMIN, but a seccomp profile or user.max_pid_namespaces refuses one:
		// try as a runner without it would, and say so.
		s.pidns, s.nopidns = false, refused.Error()
		err = s.prove()
	}
	if err == nil && !s.pidns && tryUserNS {
		s.userns = true
		err = s.prove()
		if refused := (*userNamespaceError)(nil); errors.As(err, &refused) {
			s.userns, s.nouserns = false, refused.Error()
			err = nil
		}
	}
	if err == nil && !s.pidns && !s.userns {
		err = errors.New(s.noEscapeeKill())
	}
	if err != nil {
		s.reason = err.Error()
		return
	}
	if s.root {
		// A network namespace needs CAP_SYS_ADMIN in the runner's own user namespace;
		// a container's seccomp profile may still refuse it.
		s.netns = true
		if err := s.proveNetwork(); err != nil {
			s.netns, s.nonetns = false, err.Error()
		}
	}
}

// noEscapeeKill says why runs cannot be made to kill their escapees.
func (s *Sandbox) noEscapeeKill() string {
	pid := s.nopidns
	if pid == "" {
		pid = "the runner holds no CAP_SYS_ADMIN for a PID namespace"
	}
	user := s.nouserns
	if user == "" {
		user = "user namespaces are not tried"
	}
	return "the runner refuses to judge: a process that leaves a run's process group (setsid, a double fork) would outlive the run " +
		"and could change the work while it is checked, and nothing here stops it (" + pid + "; " + user + "; allow unprivileged user " +
		"namespaces: sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0 " +
		"where the kernel has them, or give the runner CAP_SYS_ADMIN)"
}

// prove starts /bin/true confined and waits for it.
func (s *Sandbox) prove() error {
	cmd := exec.Command("/bin/true")
	done := make(chan error, 1)
	if err := s.start(cmd, Policy{ReadExec: systemDirs}, func() { done <- cmd.Wait() }); err != nil {
		if s.userns && !errors.Is(err, errConfine) {
			return &userNamespaceError{err}
		}
		return fmt.Errorf("a confined test command could not start: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("a confined /bin/true failed: %w", err)
	}
	return nil
}

// pidNamespaceError is a failure to give a run its PID namespace.
type pidNamespaceError struct{ err error }

func (e *pidNamespaceError) Error() string {
	return "the kernel refused a PID namespace: unshare(CLONE_NEWPID): " + e.err.Error()
}

func (e *pidNamespaceError) Unwrap() error { return e.err }

// userNamespaceError is a failure to start a run in a user and PID namespace of its
// own.
type userNamespaceError struct{ err error }

func (e *userNamespaceError) Error() string {
	return "the kernel refused a user namespace: clone(CLONE_NEWUSER|CLONE_NEWPID): " + e.err.Error()
}

func (e *userNamespaceError) Unwrap() error { return e.err }

// errConfine marks a failure of the thread's own confinement, before any fork.
var errConfine = errors.New("confining the thread")

// checkPidfd makes os/exec's one-time check of pidfd support happen here, on an
// ordinary thread. The check forks a child that exits at once; made on a confining
// thread, after its unshare(CLONE_NEWPID), that child would be the namespace's PID 1
// and its exit would leave the namespace dead, so that the command's own fork failed
// (ENOMEM).
var checkPidfd = sync.OnceFunc(func() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
})

// start runs cmd from a fresh locked thread that confines itself first (when the
// sandbox is on), then calls whileRunning on that thread. The goroutine ends without
// unlocking, so the Go runtime destroys the tainted thread.
func (s *Sandbox) start(cmd *exec.Cmd, p Policy, whileRunning func()) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.mode == ModeOn && (s.pidns || s.userns) {
		checkPidfd()
	}
	if s.mode == ModeOn && s.userns {
		// No CAP_SYS_ADMIN: the command itself is cloned into a user namespace of its
		// own (which needs no capability) and a PID namespace owned by it, of which it
		// is PID 1. unshare(CLONE_NEWUSER) is refused to a threaded process, so it is
		// a clone flag, not a step of confineThread. No id maps: the confined thread
		// may not write /proc/<pid>/uid_map (Landlock grants /proc read-only), and
		// none is needed — the kernel checks the run's real ids as before, the run
		// sees itself and every file as the overflow id (nobody), and with no mapped
		// root its exec gains no capability in the namespace either.
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	}
	type result struct {
		err error
		lns []portListener
	}
	started := make(chan result, 1)
	handed := make(chan struct{}) // closed once the listeners are the caller's
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread's confinement must never run other goroutines.
		if s.mode == ModeOn && unix.Gettid() == unix.Getpid() {
			started <- result{err: errors.New("sandbox: refusing to confine the main thread")}
			return
		}
		var lns []portListener
		if s.mode == ModeOn {
			var err error
			if lns, err = s.confineThread(p); err != nil {
				started <- result{err: fmt.Errorf("%w: %w", errConfine, err)}
				return
			}
		}
		if err := cmd.Start(); err != nil {
			closeListeners(lns)
			started <- result{err: err}
			return
		}
		started <- result{lns: lns}
		whileRunning()
		if len(lns) > 0 {
			// The run is over: its namespace goes with its last socket.
			<-handed
			closeListeners(lns)
		}
	}()
	r := <-started
	if r.err == nil && len(r.lns) > 0 {
		// Here, not on the confined thread: the caller's code must not run inside
		// the run's namespace and confinement.
		defer close(handed)
		for _, l := range r.lns {
			p.Network.OnListen(l.port, l.ln)
		}
	}
	return r.err
}

// confineThread confines the calling (locked) thread, in the order each step needs:
// namespaces and mounts need CAP_SYS_ADMIN, the capability drops need CAP_SETPCAP,
// Landlock and seccomp need no_new_privs. With a Network policy it returns the
// listeners made in the run's network namespace (closed if a later step fails).
func (s *Sandbox) confineThread(p Policy) (lns []portListener, err error) {
	p = p.Normalize()
	if p.AllowUnix && !s.root {
		// Without a mount namespace PostgreSQL's socket under /run would be in reach.
		return nil, errors.New("sandbox: unix sockets are allowed only where the runner can make a mount namespace (CAP_SYS_ADMIN) to hide /run, /var/run and /tmp")
	}
	defer func() {
		if err != nil {
			closeListeners(lns)
			lns = nil
		}
	}()
	if p.Network != nil {
		// Defence in depth: Landlock grants connect to the served ports only.
		p.ConnectTCP = p.Network.Ports
		if lns, err = enterPrivateNetwork(p.Network.Ports); err != nil || s.netOnly {
			return lns, err
		}
	}
	if s.pidns {
		// Only this thread's children are affected, and the first one it forks, the
		// command (nothing forks on this thread before it: see checkPidfd), is PID 1 of
		// the new namespace. Go's fork checks getppid() against the parent's pid to
		// catch a parent that died before PR_SET_PDEATHSIG; in the namespace getppid()
		// is 0, so the child signals itself SIGKILL, which the kernel drops, as it does
		// every signal a namespace's init sends itself. The parent-death signal still
		// reaches it, sent from the parent namespace, but that check no longer covers
		// a runner that dies in the microseconds between the fork and the child's
		// prctl, before the command runs: then the command outlives the runner.
		if err := unix.Unshare(unix.CLONE_NEWPID); err != nil {
			return lns, &pidNamespaceError{err}
		}
	}
	if p.AllowUnix {
		// Without AllowUnix the seccomp filter refuses every unix socket already.
		if err := maskSocketDirs(p); err != nil {
			return lns, fmt.Errorf("sandbox: mount namespace: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return lns, fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if s.caps {
		if err := dropCapabilities(s.lastCap); err != nil {
			return lns, fmt.Errorf("sandbox: dropping capabilities: %w", err)
		}
	}
	if err := restrictLandlock(s.abi, p); err != nil {
		return lns, fmt.Errorf("sandbox: landlock: %w", err)
	}
	if err := installSeccomp(p.AllowUnix); err != nil {
		return lns, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	return lns, nil
}

// maskSocketDirs gives the thread a private mount namespace in which /run, /var/run and
// /tmp are empty, except for the policy's own paths below them, which are cloned from
// the host and mounted back in place (a workspace under /tmp stays reachable).
func maskSocketDirs(p Policy) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return err
	}
	// Nothing mounted here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range maskedDirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		if err := maskDir(real, append(append([]string{}, p.ReadWrite...), p.ReadExec...)); err != nil {
			return fmt.Errorf("%s: %w", real, err)
		}
	}
	return nil
}

// maskDir mounts an empty tmpfs over dir and mounts back the kept paths below it.
func maskDir(dir string, paths []string) error {
	type kept struct {
		path  string
		fd    int
		isDir bool
	}
	var keep []kept
	defer func() {
		for _, k := range keep {
			unix.Close(k.fd)
		}
	}()
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !within(dir, real) || real == dir {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, real, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("cloning %s: %w", real, err)
		}
		keep = append(keep, kept{path: real, fd: fd, isDir: fi.IsDir()})
	}
	mode := "mode=0755"
	if dir == "/tmp" {
		mode = "mode=1777"
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode+",size=16m"); err != nil {
		return err
	}
	for _, k := range keep {
		if err := mountPoint(k.path, k.isDir); err != nil {
			return err
		}
		if err := unix.MoveMount(k.fd, "", unix.AT_FDCWD, k.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mounting back %s: %w", k.path, err)
		}
	}
	return nil
}

// mountPoint creates an empty directory or file at path, inside the fresh tmpfs.
func mountPoint(path string, isDir bool) error {
	if isDir {
		return os.MkdirAll(path, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// dropCapabilities leaves the thread, and every program it executes, with no
// capability at all: bounding and ambient sets emptied, root no longer special on exec,
// then effective, permitted and inheritable cleared. CAP_SYS_MODULE alone would load
// kernel code past any file rule.
func dropCapabilities(lastCap int) error {
	// linux/securebits.h: NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each with
	// its lock, and KEEP_CAPS locked off.
	const locked = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, locked, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= lastCap; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// fileRights are the Landlock rights that apply to a file rather than a directory.
const fileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev

// handledFS are the filesystem rights the kernel at abi can restrict: every one of
// them is denied unless a rule grants it.
func handledFS(abi int) uint64 {
	rights := uint64(ll.AccessFSMakeSym<<1 - 1) // ABI 1: execute … make_sym
	if abi >= 2 {
		rights |= ll.AccessFSRefer
	}
	if abi >= 3 {
		rights |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		rights |= ll.AccessFSIoctlDev
	}
	if abi >= 9 {
		rights |= ll.AccessFSResolveUnix
	}
	return rights
}

// devices every program expects to open for reading and writing. Not /dev/tty: a
// runner started from a terminal would let a worker type into it (TIOCSTI).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// readOnlyEverywhere are read-only hierarchies every run gets: /proc (Landlock keeps
// other domains' /proc/<pid>/environ, mem and fds out of reach, as ptrace would) and
// /sys (CPU counts, cgroup limits).
var readOnlyEverywhere = []string{"/proc", "/sys"}

// restrictLandlock confines the thread to p's paths and ports, and scopes signals and
// abstract unix sockets to the sandbox where the ABI allows.
func restrictLandlock(abi int, p Policy) error {
	fs := handledFS(abi)
	attr := ll.RulesetAttr{HandledAccessFS: fs}
	if abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("creating the ruleset: %w", err)
	}
	defer unix.Close(fd)
	read := uint64(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	rw := uint64(ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSTruncate|ll.AccessFSIoctlDev) & fs
	for _, r := range []struct {
		paths  []string
		rights uint64
	}{
		{p.ReadExec, read},
		{readOnlyEverywhere, ll.AccessFSReadFile | ll.AccessFSReadDir},
		{devices, rw},
		{p.ReadWrite, fs},
	} {
		for _, path := range r.paths {
			if err := addPathRule(fd, path, r.rights&fs); err != nil {
				return err
			}
		}
	}
	if abi >= 4 {
		for _, port := range p.ConnectTCP {
			rule := ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(port)}
			if err := ll.LandlockAddNetPortRule(fd, &rule, 0); err != nil {
				return fmt.Errorf("port %d: %w", port, err)
			}
		}
	}
	return ll.LandlockRestrictSelf(fd, 0)
}

// addPathRule grants rights beneath path; a path that does not exist is skipped, and a
// file gets only the rights that apply to files.
func addPathRule(rulesetFD int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) {
			return nil
		}
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	if rights == 0 {
		return nil
	}
	attr := ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}
	if err := ll.LandlockAddPathBeneathRule(rulesetFD, &attr, 0); err != nil {
		return fmt.Errorf("rule for %s: %w", path, err)
	}
	return nil
}

// holdsAnyCapability reports whether the process has any permitted capability: a root
// runner without CAP_SYS_ADMIN (a container's default set) still holds
// CAP_DAC_OVERRIDE, CAP_KILL and more, which confined processes must not.
func holdsAnyCapability() bool {
	prm, ok := statusField("CapPrm")
	if !ok {
		return true // unknown: drop what there may be
	}
	v, err := strconv.ParseUint(prm, 16, 64)
	return err != nil || v != 0
}

// hasCapability reports whether the process holds capability c in its effective set.
func hasCapability(c int) bool {
	eff, ok := statusField("CapEff")
	if !ok {
		return false
	}
	v, err := strconv.ParseUint(eff, 16, 64)
	return err == nil && v&(1<<uint(c)) != 0
}

// lastCapability is the highest capability number the kernel knows.
func lastCapability() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
}

// statusField returns a field of /proc/self/status.
func statusField(name string) (string, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
