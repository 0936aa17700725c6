package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// openData opens the SQLite database the CLI wrote in dir.
func openData(t *testing.T, dir string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{SQLitePath: filepath.Join(dir, "countersign.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCLITokensAndSandbox: token create --expires, token list, token revoke by id and
// by name; agent add and agent update with sandbox settings, each change an event.
func TestCLITokensAndSandbox(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, dir, "", "agent", "add", "lena", "--kind", "human", "--roles", "lead,admin")
	mustCLI(t, dir, "", "agent", "add", "quinn", "--kind", "worker", "--roles", "developer", "--command", "true",
		"--sandbox-read", "/opt/sdk", "--sandbox-write", "/srv/cache,/var/tmp/q", "--sandbox-connect", "443", "--sandbox-connect", "5432,443")
	month, forever := cliTokenLifecycle(t, dir)
	db := openData(t, dir)
	checkTokenLifetimes(t, db, month, forever)
	checkAgentSandbox(t, dir, db)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "lena", "--expires", "soon"}, "flag -expires"},
		{[]string{"token", "revoke"}, "a token ID, or --agent and --name, is required"},
		{[]string{"token", "revoke", "x1"}, "is not a positive number"},
		{[]string{"token", "revoke", "9999"}, "not found"},
		{[]string{"agent", "update", "quinn"}, "nothing to change"},
		{[]string{"agent", "update", "nobody", "--roles", "x"}, "not found"},
		{[]string{"agent", "update", "quinn", "--sandbox-write", "relative"}, "sandbox.write"},
		{[]string{"agent", "update", "quinn", "--sandbox-connect", "https"}, "is not a TCP port"},
		{[]string{"agent", "add", "w", "--kind", "worker", "--roles", "a", "--command", "x", "--sandbox-write", "/"}, "sandbox.write"},
		{[]string{"agent", "add", "h", "--kind", "human", "--roles", "a", "--sandbox-unix"}, "only worker agents have a sandbox"},
	} {
		if out, err := cli(t, dir, "", c.args...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v, output %q does not name %q", c.args, err, out, c.want)
		}
	}
}

// cliTokenLifecycle creates lena's tokens, lists and revokes them by id and by name,
// and returns the secrets of the 30-day and the never-expiring token (both revoked).
func cliTokenLifecycle(t *testing.T, dir string) (month, forever string) {
	t.Helper()
	month = strings.TrimSpace(mustCLI(t, dir, "", "token", "create", "lena", "--name", "ci", "--expires", "30d"))
	forever = strings.TrimSpace(mustCLI(t, dir, "", "token", "create", "lena", "--name", "laptop", "--expires", "never"))
	mustCLI(t, dir, "", "token", "create", "lena", "--name", "ci", "--expires", "720h")
	mustCLI(t, dir, "", "token", "create", "lena")

	list := mustCLI(t, dir, "", "token", "list", "lena")
	if strings.Contains(list, month) || strings.Contains(list, forever) || strings.Count(list, "active") != 4 {
		t.Fatalf("token list:\n%s", list)
	}
	laptopID := regexp.MustCompile(`(?m)^(\d+)\s+laptop\s+active\s+\S+ \S+\s+never\s+never$`).FindStringSubmatch(list)
	if laptopID == nil {
		t.Fatalf("token list does not show the laptop token as never expiring, never used:\n%s", list)
	}
	if out := mustCLI(t, dir, "", "token", "revoke", laptopID[1]); !strings.Contains(out, "token "+laptopID[1]+" (laptop) revoked") {
		t.Fatalf("revoke by id: %s", out)
	}
	if out := mustCLI(t, dir, "", "token", "revoke", "--agent", "lena", "--name", "ci"); strings.Count(out, "(ci) revoked") != 2 {
		t.Fatalf("revoke by name: %s", out)
	}
	if out, err := cli(t, dir, "", "token", "revoke", "--agent", "lena", "--name", "ci"); err == nil || !strings.Contains(out, "no unrevoked token") {
		t.Fatalf("revoking again: %v %s", err, out)
	}
	if list := mustCLI(t, dir, "", "token", "list", "lena"); strings.Count(list, "revoked") != 3 || strings.Count(list, "active") != 1 {
		t.Fatalf("after revoking:\n%s", list)
	}
	return month, forever
}

// checkTokenLifetimes checks that the revoked tokens are refused and each token lasts
// what its --expires said.
func checkTokenLifetimes(t *testing.T, db *store.DB, month, forever string) {
	t.Helper()
	svc := newService(db)
	ctx := context.Background()
	for secret, want := range map[string]string{month: "revoked", forever: "revoked"} {
		if _, err := svc.Tokens.Authenticate(ctx, secret); models.ErrorCode(err) != models.EUNAUTHORIZED || !strings.Contains(models.ErrorMessage(err), want) {
			t.Fatalf("a %s token: %v", want, err)
		}
	}
	toks, err := svc.Tokens.ListTokens(ctx, models.System, "lena")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		var want time.Duration
		switch {
		case tk.Name == "laptop":
			if tk.ExpiresAt != nil {
				t.Fatalf("--expires never: expires at %v", tk.ExpiresAt)
			}
			continue
		case tk.Name == "cli":
			want = models.DefaultTokenTTL
		default:
			want = 30 * 24 * time.Hour
		}
		if d := tk.ExpiresAt.Sub(tk.CreatedAt); d != want {
			t.Fatalf("token %s lasts %s, want %s", tk.Name, d, want)
		}
	}
}

// checkAgentSandbox checks the sandbox agent add stored, and that agent update
// changes it, each change an event.
func checkAgentSandbox(t *testing.T, dir string, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	q, err := db.GetAgentByName(ctx, "quinn")
	if err != nil {
		t.Fatal(err)
	}
	want := models.AgentSandbox{Read: []string{"/opt/sdk"}, Write: []string{"/srv/cache", "/var/tmp/q"}, Connect: []int{443, 5432}}
	if !q.Sandbox.Equal(want) {
		t.Fatalf("agent add stored sandbox %+v, want %+v", q.Sandbox, want)
	}
	mustCLI(t, dir, "", "agent", "update", "quinn", "--sandbox-write", "/srv/other", "--sandbox-unix", "--roles", "developer,tester")
	mustCLI(t, dir, "", "agent", "update", "quinn", "--sandbox-read", "")
	q, _ = db.GetAgentByName(ctx, "quinn")
	want = models.AgentSandbox{Write: []string{"/srv/other"}, Connect: []int{443, 5432}, AllowUnix: true}
	if !q.Sandbox.Equal(want) || strings.Join(q.Roles, ",") != "developer,tester" || q.Command != "true" {
		t.Fatalf("after agent update: %+v sandbox %+v", q, q.Sandbox)
	}
	evs, err := db.ListAgentEvents(ctx, q.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Type != models.AgentChangedEvent || !strings.Contains(string(evs[1].Data), `"by":"system"`) ||
		!strings.Contains(string(evs[2].Data), `"sandbox.read":{"before":["/opt/sdk"],"after":[]}`) {
		t.Fatalf("quinn's history: %+v", evs)
	}
}

// TestServeMetricsPublic: with --metrics-public (or COUNTERSIGN_METRICS_PUBLIC)
// /metrics answers without a token; the API still needs one.
func TestServeMetricsPublic(t *testing.T) {
	for name, arg := range map[string]string{"flag": "--metrics-public", "env": "COUNTERSIGN_METRICS_PUBLIC=true"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			addr := freeAddr(t)
			args := []string{"serve", "--no-runner", "--addr", addr, "--data-dir", dir}
			env := append(os.Environ(), "COUNTERSIGN_DATABASE_URL=", "DATABASE_URL=", "COUNTERSIGN_LOG_LEVEL=warn")
			if strings.HasPrefix(arg, "--") {
				args = append(args, arg)
			} else {
				env = append(env, arg)
			}
			cmd := exec.Command(binary, args...)
			cmd.Env = env
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			base := "http://" + addr
			waitFor(t, 30*time.Second, func() bool { return status(base+"/readyz", "") == 200 })
			if got := status(base+"/metrics", ""); got != 200 {
				t.Fatalf("/metrics without a token: %d, want 200", got)
			}
			if got := status(base+"/api/v1/goals", ""); got != 401 {
				t.Fatalf("/api/v1/goals without a token: %d, want 401", got)
			}
		})
	}
}
