package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forgeToken is a distinctive token: no command's output may ever contain it.
const forgeToken = "ghp_CLIforgeTOKENneverPrinted0123456789"

var forgeSecretRE = regexp.MustCompile(`webhook secret: ([0-9a-f]{64})\n`)

// TestCLIForgeRoundTrip: forge add (token from a file) prints the webhook path and a
// secret once; list shows the forge without its token; map, agent --forge, update
// (token from stdin), rotate-secret, unmap and rm each do what they say; no output of
// any command holds the token, and list never holds a secret.
func TestCLIForgeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(forgeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var outs []string
	run := func(stdin string, args ...string) string {
		t.Helper()
		out := mustCLI(t, dir, stdin, args...)
		outs = append(outs, out)
		return out
	}
	run("", "agent", "add", "rev", "--kind", "human", "--roles", "reviewer")
	add := run("", "forge", "add", "gh", "--kind", "github", "--repo", "acme/widgets", "--token-file", tokFile)
	for _, want := range []string{"forge gh added (github, acme/widgets)", "/api/v1/forges/gh/webhook", "application/json", "pull request reviews"} {
		if !strings.Contains(add, want) {
			t.Fatalf("forge add lacks %q:\n%s", want, add)
		}
	}
	m := forgeSecretRE.FindStringSubmatch(add)
	if m == nil {
		t.Fatalf("forge add printed no secret:\n%s", add)
	}
	list := run("", "forge", "list")
	if !strings.Contains(list, "gh") || !strings.Contains(list, "acme/widgets") || strings.Contains(list, m[1]) {
		t.Fatalf("forge list:\n%s", list)
	}

	run("", "forge", "map", "gh", "octo-rev", "rev")
	if list = run("", "forge", "list"); !strings.Contains(list, "octo-rev=rev") {
		t.Fatalf("mapping not listed:\n%s", list)
	}
	run("", "agent", "add", "bot", "--kind", "worker", "--roles", "developer", "--command", "true",
		"--workdir", t.TempDir(), "--worktree", "--forge", "gh")
	// A forge an agent names cannot be removed.
	if out, err := cli(t, dir, "", "forge", "rm", "gh"); err == nil || !strings.Contains(out, "bot") {
		t.Fatalf("rm of a forge in use: %v\n%s", err, out)
	}
	run("", "agent", "update", "bot", "--forge", "")

	upd := run("ghp_second"+forgeToken+"\n", "forge", "update", "gh", "--repo", "acme/gadgets", "--target-branch", "release", "--token-file", "-")
	if !strings.Contains(upd, "token replaced") {
		t.Fatalf("update: %s", upd)
	}
	if list = run("", "forge", "list"); !strings.Contains(list, "acme/gadgets") || !strings.Contains(list, "release") {
		t.Fatalf("update not listed:\n%s", list)
	}
	rot := run("", "forge", "rotate-secret", "gh")
	m2 := forgeSecretRE.FindStringSubmatch(rot)
	if m2 == nil || m2[1] == m[1] {
		t.Fatalf("rotate-secret printed no new secret:\n%s", rot)
	}
	run("", "forge", "unmap", "gh", "octo-rev")
	if list = run("", "forge", "list"); strings.Contains(list, "octo-rev") {
		t.Fatalf("unmapped login still listed:\n%s", list)
	}
	run("", "forge", "rm", "gh")
	if list = run("", "forge", "list"); strings.Contains(list, "acme") {
		t.Fatalf("removed forge still listed:\n%s", list)
	}
	for _, out := range outs {
		if strings.Contains(out, forgeToken) {
			t.Fatalf("an output holds the token:\n%s", out)
		}
	}
}

// TestCLIForgeRefusesBadInput: a bad kind or repository, a missing token, and a token
// given twice are refused with a message naming the problem, and nothing is added;
// a bad update leaves the forge as it was.
func TestCLIForgeRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CS_FORGE_TEST_TOKEN", forgeToken)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(forgeToken), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "bitbucket", "--repo", "acme/widgets", "--token-env", "CS_FORGE_TEST_TOKEN"}, "kind: must be github or gitlab"},
		{[]string{"--kind", "github", "--repo", "widgets", "--token-env", "CS_FORGE_TEST_TOKEN"}, "repo: must be OWNER/NAME"},
		{[]string{"--kind", "github", "--repo", "acme/widgets"}, "token is required"},
		{[]string{"--kind", "github", "--repo", "acme/widgets", "--token-env", "CS_FORGE_TEST_TOKEN", "--token-file", tokFile}, "not both"},
		{[]string{"--kind", "github", "--repo", "acme/widgets", "--token-env", "CS_FORGE_UNSET_VAR"}, "CS_FORGE_UNSET_VAR is empty"},
	} {
		out, err := cli(t, dir, "", append([]string{"forge", "add", "gh"}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Fatalf("forge add %v: %v, want %q:\n%s", c.args, err, c.want, out)
		}
		if strings.Contains(out, forgeToken) {
			t.Fatalf("a refusal shows the token:\n%s", out)
		}
	}
	if list := mustCLI(t, dir, "", "forge", "list"); strings.Contains(list, "gh") {
		t.Fatalf("a refused forge was added:\n%s", list)
	}
	mustCLI(t, dir, "", "forge", "add", "gh", "--kind", "github", "--repo", "acme/widgets", "--token-env", "CS_FORGE_TEST_TOKEN")
	out, err := cli(t, dir, "", "forge", "update", "gh", "--kind", "gitlab", "--repo", "x")
	if err == nil || !strings.Contains(out, "repo") {
		t.Fatalf("bad update: %v\n%s", err, out)
	}
	if list := mustCLI(t, dir, "", "forge", "list"); !strings.Contains(list, "github") || !strings.Contains(list, "acme/widgets") {
		t.Fatalf("a refused update changed the forge:\n%s", list)
	}
}
