// Command probe is the hostile worker of the sandbox tests: it tries every way out of
// its sandbox that the trust boundary closes, and the ways in that it must keep, and
// prints one line per attempt, "name: ok" or "name: denied: <error>". It judges
// nothing itself; the tests compare its lines with what the policy allows.
//
// Targets come from flags so that one binary serves the sandbox package's tests and
// the runner's end-to-end tests. -reach name=kind:addr (repeatable) tries one place on
// the network (tcp, udp, mptcp, unix with @ for abstract, icmp over a raw socket) and
// prints "name: ok: <the first line it answered>"; -interfaces lists the interfaces
// the probe sees; -net-only skips all but these and -api. With -escape it does one
// thing only: it leaves behind a process that has left its session and process
// group, as a worker that wants to outlive its attempt would, and exits.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	db := flag.String("db", "", "a file of the judge (the database) to read")
	pid := flag.Int("pid", 0, "the server's pid: read its environ, signal it")
	other := flag.String("other", "", "another task's workspace to list")
	pgPort := flag.Int("pg-port", 5432, "PostgreSQL's TCP port")
	pgSocket := flag.String("pg-socket", "/var/run/postgresql/.s.PGSQL.5432", "PostgreSQL's unix socket")
	api := flag.String("api", "", "URL to GET with $COUNTERSIGN_TOKEN (Countersign's API): must answer 200")
	apiOther := flag.String("api-other", "", "URL of another task to GET with $COUNTERSIGN_TOKEN: the token's scope must refuse it")
	gotest := flag.Bool("go-test", false, "also run `go test` on a tiny module in the workspace")
	connect := flag.Int("connect", 0, "a TCP port on 127.0.0.1 to try, as a model API on 443 would be (nothing need listen: refused means the sandbox let it through)")
	escape := flag.String("escape", "", "instead of the other attempts: leave an escapee behind (see escapeAndExit), which writes its pid to this file")
	linger := flag.String("linger", "", "be the escapee: write this process's pid as the host numbers it to this file, then sleep")
	flag.Parse()

	if *linger != "" {
		lingerAsEscapee(*linger)
		return
	}
	if *escape != "" {
		escapeAndExit(*escape)
		return
	}

	defer out.Flush()
	tryReach()
	tryAPI(*api, *apiOther)
	if *netOnly {
		return
	}
	if *db != "" {
		try("read-db", func() error { _, err := os.ReadFile(*db); return err })
	}
	if *pid != 0 {
		try("read-environ", func() error {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", *pid))
			if err == nil && len(b) == 0 {
				return errors.New("empty")
			}
			return err
		})
		try("signal-server", func() error { return syscall.Kill(*pid, 0) })
	}
	if *other != "" {
		try("list-other-workspace", func() error { _, err := os.ReadDir(*other); return err })
	}
	stamp := fmt.Sprintf("probe-%d", os.Getpid())
	try("write-tmp", func() error { return writeAndRemove(filepath.Join("/tmp", stamp)) })
	try("write-parent", func() error { return writeAndRemove(filepath.Join("..", stamp)) })
	try("tcp-postgres", func() error { return dial("tcp", fmt.Sprintf("127.0.0.1:%d", *pgPort)) })
	try("mptcp-postgres", func() error { return dialMPTCP(*pgPort) })
	try("tfo-postgres", func() error { return dialFastOpen(*pgPort) })
	try("unix-postgres", func() error { return dial("unix", *pgSocket) })
	try("capabilities", heldCapabilities)
	if brief := os.Getenv("COUNTERSIGN_BRIEF_FILE"); brief != "" {
		// The runner's briefs and logs: readable evidence, never the worker's to write.
		try("write-meta", func() error { return writeAndRemove(filepath.Join(filepath.Dir(brief), stamp)) })
		try("read-brief", func() error { _, err := os.ReadFile(brief); return err })
	}

	try("write-workspace", func() error { return os.WriteFile(stamp+".txt", []byte("mine"), 0o644) })
	try("write-tmpdir", func() error { return writeAndRemove(filepath.Join(os.Getenv("TMPDIR"), stamp)) })
	try("write-home", func() error { return writeAndRemove(filepath.Join(os.Getenv("HOME"), stamp)) })
	try("run-sh", func() error { return exec.Command("/bin/sh", "-c", "echo hi >/dev/null").Run() })
	try("run-git", func() error { return exec.Command("git", "--version").Run() })
	if *gotest {
		try("go-test", goTest)
	}
	if *connect != 0 {
		try("connect-allowed-port", func() error { return dial("tcp", fmt.Sprintf("127.0.0.1:%d", *connect)) })
		try("claude-home", func() error {
			dir := filepath.Join(os.Getenv("HOME"), ".claude")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "settings.json"), []byte("{}"), 0o600)
		})
	}
}

// out collects the verdicts, one line per attempt.
var out = bufio.NewWriter(os.Stdout)

// try makes one attempt and prints its verdict.
func try(name string, f func() error) {
	if err := f(); err != nil {
		fmt.Fprintf(out, "%s: denied: %v\n", name, err)
	} else {
		fmt.Fprintf(out, "%s: ok\n", name)
	}
}

// tryAPI GETs Countersign's API for the run's task and for another task's, where given.
func tryAPI(api, apiOther string) {
	if api != "" {
		try("api", func() error { return get(api) })
	}
	if apiOther != "" {
		try("api-other-task", func() error { return get(apiOther) })
	}
}

func writeAndRemove(p string) error {
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		return err
	}
	return os.Remove(p)
}

func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// dialMPTCP connects over Multipath TCP, which Landlock's TCP rules do not see.
func dialMPTCP(port int) error {
	const ipprotoMPTCP = 262
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, ipprotoMPTCP)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	return syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
}

// dialFastOpen connects with TCP Fast Open: sendto with MSG_FASTOPEN connects and
// sends at once, without connect(2), where Landlock's connect rule does not look. The
// PostgreSQL startup message is sent so that a server that answers proves the way in.
func dialFastOpen(port int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	const msgFastOpen = 0x20000000
	startup := []byte{0, 0, 0, 8, 4, 210, 22, 47} // SSLRequest: any PostgreSQL answers 'N' or 'S'
	if err := syscall.Sendto(fd, startup, msgFastOpen, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("sendto: %w", err)
	}
	var reply [1]byte
	if _, err := syscall.Read(fd, reply[:]); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// heldCapabilities fails (reports "ok") only when the process holds no capability in
// any set: "ok" means it could use one.
func heldCapabilities() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var held []string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			if strings.Trim(strings.TrimSpace(v), "0") != "" {
				held = append(held, k)
			}
		}
	}
	if len(held) == 0 {
		return errors.New("none held")
	}
	return nil
}

func goTest() error {
	dir, err := os.MkdirTemp(".", "gotest-")
	if err != nil {
		return err
	}
	files := map[string]string{
		"go.mod":      "module probe\n\ngo 1.21\n",
		"add.go":      "package probe\n\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package probe\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func get(url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("COUNTERSIGN_TOKEN"))
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// escapeAndExit starts a copy of the probe that leaves the probe's session and process
// group (setsid) and keeps the probe's stdout and stderr open, waits until that
// escapee has written its pid to pidFile, then until pidFile+".go" exists (the test
// has seen the escapee alive), and exits 0, leaving the escapee behind. It prints
// "escape: ok" once the escapee has reported, or "escape: denied: <error>".
func escapeAndExit(pidFile string) {
	fail := func(err error) {
		fmt.Printf("escape: denied: %v\n", err)
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[0], "-linger", pidFile)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // holds the run's output pipe open
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	if err := waitFor(pidFile); err != nil {
		fail(err)
	}
	fmt.Println("escape: ok")
	if err := waitFor(pidFile + ".go"); err != nil {
		fail(err)
	}
}

// lingerAsEscapee writes this process's pid as the host numbers it — /proc is the
// host's even in a PID namespace of its own, so the link /proc/self names the host pid,
// where getpid() would give the namespace's — and sleeps. The file is renamed into
// place so that it is never seen half written.
func lingerAsEscapee(pidFile string) {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		fmt.Printf("linger: denied: %v\n", err)
		os.Exit(1)
	}
	tmp := pidFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(self+"\n"), 0o644); err != nil {
		fmt.Printf("linger: denied: %v\n", err)
		os.Exit(1)
	}
	if err := os.Rename(tmp, pidFile); err != nil {
		fmt.Printf("linger: denied: %v\n", err)
		os.Exit(1)
	}
	time.Sleep(time.Minute)
}

// waitFor waits up to 20 seconds for path to exist.
func waitFor(path string) error {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear: %w", path, err)
		}
	}
}
