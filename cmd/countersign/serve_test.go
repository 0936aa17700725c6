package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeDemo runs the README's run command (serve --demo on the embedded default)
// and checks what a newcomer sees: the one-time admin password, the demo reaching
// every outcome within a minute, and every surface answering — API, dashboard login,
// WebSocket and MCP refusing strangers, metrics — then a clean shutdown on SIGTERM.
func TestServeDemo(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := startServeDemo(t, dir, addr)
	base := "http://" + addr
	waitFor(t, 30*time.Second, func() bool { return status(base+"/readyz", "") == 200 })
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

// startServeDemo starts `serve --demo` on addr and waits for the one-time admin
// password it prints on first start.
func startServeDemo(t *testing.T, dir, addr string) *exec.Cmd {
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
	password := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "One-time password, shown only now: "); ok {
				password <- p
			}
		}
	}()
	select {
	case p := <-password:
		if len(p) < 10 {
			t.Fatalf("password %q", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no one-time admin password printed")
	}
	return cmd
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
