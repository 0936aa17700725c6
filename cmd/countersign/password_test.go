package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIAgentPassword: a locked-out admin gets back in at the console: `agent password
// NAME` sets the password read from stdin, or generates and prints one when stdin is
// empty, lifting the lockout; a short password or a worker is refused.
func TestCLIAgentPassword(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, dir, "lost-password-1\n", "agent", "add", "ada", "--kind", "human", "--roles", "admin", "--password-stdin")
	mustCLI(t, dir, "", "agent", "add", "quinn", "--kind", "worker", "--roles", "developer", "--command", "true")
	ctx := context.Background()
	db := openData(t, dir)
	if err := db.LockLogin(ctx, "ada", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if out := mustCLI(t, dir, "found-again-22\n", "agent", "password", "ada"); !strings.Contains(out, "password of ada set") || strings.Contains(out, "found-again") {
		t.Fatalf("agent password from stdin: %s", out)
	}
	db = openData(t, dir)
	if a, err := db.GetAgentByName(ctx, "ada"); err != nil || !a.CheckPassword("found-again-22") {
		t.Fatalf("the password from stdin does not sign in: %v", err)
	}
	if _, err := db.GetLoginFailures(ctx, "ada"); err == nil {
		t.Fatal("the lockout stayed")
	}
	db.Close()

	out := mustCLI(t, dir, "", "agent", "password", "ada")
	m := regexp.MustCompile(`one-time password, shown only now: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no generated password printed: %s", out)
	}
	db = openData(t, dir)
	if a, err := db.GetAgentByName(ctx, "ada"); err != nil || !a.CheckPassword(m[1]) {
		t.Fatalf("the generated password does not sign in: %v", err)
	}
	db.Close()

	if out, err := cli(t, dir, "short\n", "agent", "password", "ada"); err == nil || !strings.Contains(out, "at least 10") {
		t.Fatalf("a short password: %v %s", err, out)
	}
	if out, err := cli(t, dir, "", "agent", "password", "quinn"); err == nil || !strings.Contains(out, "human") {
		t.Fatalf("a worker's password: %v %s", err, out)
	}
}
