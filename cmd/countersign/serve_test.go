package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeDemo runs the README's run command (serve --demo on the embedded default)
// and checks what a newcomer sees: a sign-in line with the address and a one-time
// password for the admin and for each demo person (each signs in with it), the demo reaching
// every outcome within a minute, and every surface answering — API, dashboard login,
// WebSocket and MCP refusing strangers, metrics — then a clean shutdown on SIGTERM.
func TestServeDemo(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd, people := startServeDemo(t, dir, addr)
	base := "http://" + addr
	waitFor(t, 30*time.Second, func() bool { return status(base+"/readyz", "") == 200 })
	// Every persona signs in with the password printed for it.
	for name, pw := range people {
		if got := signInStatus(t, base, name, pw); got != http.StatusSeeOther {
			t.Errorf("signing in as %s with the printed password: %d, want 303", name, got)
		}
	}
	var ready map[string]string
	getJSON(t, base+"/readyz", "", &ready)
	if !strings.HasPrefix(ready["sandbox"], "sandbox on: Landlock ABI") {
		t.Errorf("/readyz does not say what confines workers: %v", ready)
	}
	token := strings.TrimSpace(mustCLI(t, dir, "", "token", "create", "admin"))
	waitForDemoOutcomes(t, base, token)
	checkServedEndpoints(t, base, token)
	stopServeDemo(t, cmd)
}

// signInLine is how serve prints a person it created on its first start.
var signInLine = regexp.MustCompile(`^Sign in at (\S+) as (\S+) with password (\S+) \(roles ([^)]+)\)$`)

// startServeDemo starts `serve --demo` on addr and waits for the sign-in lines it
// prints on first start: the admin's and the demo tester's, each with the address
// to sign in at and a one-time password. It returns the passwords by name.
func startServeDemo(t *testing.T, dir, addr string) (*exec.Cmd, map[string]string) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--demo", "--addr", addr, "--data-dir", dir)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_DATABASE_URL=", "DATABASE_URL=", "ANTHROPIC_API_KEY=", "COUNTERSIGN_LOG_LEVEL=warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan []string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := signInLine.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m
			}
		}
	}()
	people := map[string]string{}
	for people["admin"] == "" || people["tess"] == "" {
		select {
		case m := <-lines:
			if m[1] != "http://"+addr || len(m[3]) < 10 {
				t.Fatalf("sign-in line %q: want the address http://%s and a password", m[0], addr)
			}
			people[m[2]] = m[3]
		case <-time.After(30 * time.Second):
			t.Fatalf("no sign-in line for the admin and the demo tester within 30s (have %v)", people)
		}
	}
	return cmd, people
}

// signInStatus posts the login form as name with password and returns the status.
func signInStatus(t *testing.T, base, name, password string) int {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	res, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	csrf := ""
	for _, ck := range res.Cookies() {
		csrf = ck.Value // the login form's token is its cookie's value
	}
	form := url.Values{"name": {name}, "password": {password}, "csrf": {csrf}, "next": {"/"}}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range res.Cookies() {
		req.AddCookie(ck)
	}
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// waitForDemoOutcomes waits until the demo has reached every outcome and the ledger
// has posted its entries.
func waitForDemoOutcomes(t *testing.T, base, token string) {
	t.Helper()
	// The demo reaches every outcome: verified after a revision, blocked, advisory.
	waitFor(t, 60*time.Second, func() bool {
		var tasks struct{ Tasks []struct{ State string } }
		var inbox struct{ Items []struct{ Kind string } }
		getJSON(t, base+"/api/v1/tasks", token, &tasks)
		getJSON(t, base+"/api/v1/inbox", token, &inbox)
		states, kinds := map[string]int{}, map[string]int{}
		for _, tk := range tasks.Tasks {
			states[tk.State]++
		}
		for _, it := range inbox.Items {
			kinds[it.Kind]++
		}
		return states["verified"] >= 2 && states["blocked"] == 1 && kinds["blocked"] == 1 && kinds["advisory"] == 1
	})
	var led struct {
		Entries []struct{ Type, Status string }
	}
	waitFor(t, 30*time.Second, func() bool {
		getJSON(t, base+"/api/v1/ledger", token, &led)
		for _, e := range led.Entries {
			if e.Status != "posted" {
				return false
			}
		}
		return len(led.Entries) >= 3
	})
}

// checkServedEndpoints checks what each endpoint answers without a token, and that
// /metrics with one carries the runner's figures.
func checkServedEndpoints(t *testing.T, base, token string) {
	t.Helper()
	for path, want := range map[string]int{"/login": 200, "/api/v1/goals": 401, "/mcp": 401, "/ws": 401, "/": 303, "/metrics": 401} {
		if got := status(base+path, ""); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, m := range []string{`countersign_tasks{state="verified"}`, "countersign_attempts_total", "countersign_dispatch_latency_seconds", "countersign_ledger_backlog", "countersign_websocket_clients"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// stopServeDemo sends SIGTERM and expects a clean exit within 30s.
func stopServeDemo(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of SIGTERM")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// status returns the status of a GET without following redirects.
func status(url, token string) int {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
