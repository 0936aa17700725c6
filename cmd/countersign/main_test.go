package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the countersign binary built once for the CLI tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "countersign-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "countersign")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building countersign: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs the binary with a data dir and returns its combined output and error.
func cli(t *testing.T, dataDir, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_DATA_DIR="+dataDir, "COUNTERSIGN_DATABASE_URL=", "DATABASE_URL=")
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustCLI(t *testing.T, dataDir, stdin string, args ...string) string {
	t.Helper()
	out, err := cli(t, dataDir, stdin, args...)
	if err != nil {
		t.Fatalf("countersign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestCLIOperatorCommands(t *testing.T) {
	dir := t.TempDir()
	if out := mustCLI(t, dir, "", "version"); !strings.HasPrefix(out, "countersign ") {
		t.Fatalf("version: %q", out)
	}
	mustCLI(t, dir, "", "migrate")
	mustCLI(t, dir, "", "migrate") // idempotent
	mustCLI(t, dir, "", "agent", "add", "lena", "--kind", "human", "--roles", "lead,admin")
	mustCLI(t, dir, "correct horse battery\n", "agent", "add", "eve", "--kind", "human", "--roles", "exec", "--password-stdin")
	mustCLI(t, dir, "", "agent", "add", "quinn", "--kind", "worker", "--roles", "developer", "--command", "claude")
	tok := strings.TrimSpace(mustCLI(t, dir, "", "token", "create", "lena"))
	if !strings.HasPrefix(tok, "cs_") || len(tok) < 40 {
		t.Fatalf("token %q", tok)
	}
	out := mustCLI(t, dir, "", "template", "import", "../../models/testdata/seed_steps.yaml")
	if !strings.Contains(out, "template seed_steps version 1 saved (3 steps)") {
		t.Fatalf("import: %s", out)
	}
	mustCLI(t, dir, "", "template", "import", "../../models/testdata/seed_steps.yaml")
	yaml := mustCLI(t, dir, "", "template", "export", "seed_steps")
	if !strings.Contains(yaml, "signal: signed_off") || !strings.Contains(yaml, "version: 2") {
		t.Fatalf("export: %s", yaml)
	}
	for _, f := range []string{"seed_task_verify.md", "seed_task_signal.md"} {
		out := mustCLI(t, dir, "", "task", "import", "../../models/testdata/"+f)
		if !strings.Contains(out, "created") {
			t.Fatalf("task import %s: %s", f, out)
		}
	}
	if out := mustCLI(t, dir, "", "ledger", "verify"); !strings.Contains(out, "ledger chain intact") {
		t.Fatalf("ledger verify: %s", out)
	}
}

func TestCLIErrorsNameTheProblem(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"frobnicate"}, "", `unknown command "frobnicate"`},
		{[]string{"agent", "add", "x", "--kind", "robot", "--roles", "a"}, "", "kind"},
		{[]string{"agent", "add", "Bad Name", "--roles", "a"}, "", "name"},
		{[]string{"agent", "add", "w", "--kind", "worker", "--roles", "a"}, "", "command"},
		{[]string{"agent", "add", "--kind", "human"}, "", "agent NAME is required"},
		{[]string{"agent", "add", "x", "--bogus"}, "", "flag provided but not defined: -bogus"},
		{[]string{"token", "create", "nobody"}, "", "not found"},
		{[]string{"serve", "--ledger", "paper"}, "", "flag -ledger"},
		{[]string{"serve", "--database-url", "mysql://x"}, "", "flag -database-url"},
		{[]string{"serve"}, "COUNTERSIGN_DEMO=perhaps", "COUNTERSIGN_DEMO"},
		{[]string{"serve", "--log-level", "loud"}, "", "flag -log-level"},
		{[]string{"template", "import", "/nonexistent.yaml"}, "", "no such file"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, tc.args...)
			cmd.Env = append(os.Environ(), "COUNTERSIGN_DATA_DIR="+dir, "COUNTERSIGN_ADDR=127.0.0.1:0")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_ = ctx
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("succeeded: %s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q does not name %q", out, tc.want)
			}
		})
	}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"agent", "add", "--help"}, {"ledger", "verify", "--help"}} {
		out, err := cli(t, dir, "", args...)
		if err != nil || !strings.Contains(out, "Usage: countersign") {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
}
