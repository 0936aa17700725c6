//go:build linux

package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// runGeminiCLI runs the real Gemini CLI (COUNTERSIGN_GEMINI_BIN, the version .ci/run
// pins) headless against base with key, as the gemini preset does, for at most
// limit; it returns its output and whether it exited by itself.
func runGeminiCLI(t *testing.T, base, key string, limit time.Duration) (string, bool) {
	t.Helper()
	bin := os.Getenv("COUNTERSIGN_GEMINI_BIN")
	if bin == "" {
		t.Skip("COUNTERSIGN_GEMINI_BIN is not set (.ci/run installs the pinned Gemini CLI)")
	}
	home := t.TempDir()
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--approval-mode", "auto_edit", "--skip-trust", "-o", "stream-json")
	cmd.Dir = home
	cmd.Stdin = strings.NewReader("Say hello.")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GOOGLE_GEMINI_BASE_URL=" + base,
		"GEMINI_API_KEY=" + key, "GEMINI_MODEL=" + gemini}
	// The CLI relaunches itself as a child node process: the whole group is killed
	// at the limit, and the pipes are not waited on past it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out, _ := cmd.CombinedOutput()
	return string(out), ctx.Err() == nil
}

// TestGeminiCLIStopsAtBudget: the real Gemini CLI, refused by the gateway for a spent
// budget (400 FAILED_PRECONDITION), stops after that one request: no retry, no
// fallback to another model. The sub-test "429 would retry" answers the same call
// 429 RESOURCE_EXHAUSTED, the other candidate shape, and the CLI calls again.
func TestGeminiCLIStopsAtBudget(t *testing.T) {
	var calls atomic.Int32
	gw, err := New(Config{Gemini: Upstream{BaseURL: "http://127.0.0.1:1", Key: geminiSecret}, Prices: testPrices()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		t.Logf("the CLI called %s %s", r.Method, r.URL.Path)
		gw.ServeHTTP(w, r)
	}))
	defer srv.Close()
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 0}}})
	out, exited := runGeminiCLI(t, srv.URL, l.Credential(), 90*time.Second)
	m := l.Revoke()
	if !exited || calls.Load() != 1 || m.BudgetRefused != 1 || !strings.Contains(out, "task:1") {
		t.Fatalf("exited %v after %d calls, metered %+v; output:\n%s", exited, calls.Load(), m, out)
	}

	t.Run("429 would retry", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":429,"message":"budget spent","status":"RESOURCE_EXHAUSTED"}}`))
		}))
		defer srv.Close()
		runGeminiCLI(t, srv.URL, "any-key", 20*time.Second)
		if calls.Load() < 2 {
			t.Fatalf("the CLI called %d times on a 429; the refusal shape's choice rests on it retrying", calls.Load())
		}
		t.Logf("on a 429 the CLI called %d times in 20 s", calls.Load())
	})
}
