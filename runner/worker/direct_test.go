package worker

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseDirect(t *testing.T) {
	for _, tc := range []struct {
		command string
		ok      bool
		want    directCommand
	}{
		{"cat", true, directCommand{argv: []string{"cat"}}},
		{"go test -count=1 ./...", true, directCommand{argv: []string{"go", "test", "-count=1", "./..."}}},
		{`claude -p 'say "hi"' --model "opus 4"`, true, directCommand{argv: []string{"claude", "-p", `say "hi"`, "--model", "opus 4"}}},
		{"cat >/dev/null", true, directCommand{argv: []string{"cat"}, nullStdout: true}},
		{"cat >/dev/null 2>&1", true, directCommand{argv: []string{"cat"}, nullStdout: true, nullStderr: true}},
		{"cat 2>&1 >/dev/null", true, directCommand{argv: []string{"cat"}, nullStdout: true, stderrToStdout: true}},
		{"cat 2>/dev/null", true, directCommand{argv: []string{"cat"}, nullStderr: true}},
		{"'>' x", true, directCommand{argv: []string{">", "x"}}},
		{"  cat\t-n  ", true, directCommand{argv: []string{"cat", "-n"}}},
		// Anything a shell would do more with stays with the shell.
		{"", false, directCommand{}},
		{">/dev/null", false, directCommand{}},
		{"cat > out.txt", false, directCommand{}},
		{"cat >out.txt", false, directCommand{}},
		{"cat </dev/null", false, directCommand{}},
		{"cat | wc", false, directCommand{}},
		{"cat; rm x", false, directCommand{}},
		{"cat && rm x", false, directCommand{}},
		{"cat &", false, directCommand{}},
		{"echo $HOME", false, directCommand{}},
		{`echo "$HOME"`, false, directCommand{}},
		{"cat `x`", false, directCommand{}},
		{"cat $(x)", false, directCommand{}},
		{"cat ~/x", false, directCommand{}},
		{"cat *.go", false, directCommand{}},
		{"cat a\\ b", false, directCommand{}},
		{"cat # comment", false, directCommand{}},
		{"cat 'unterminated", false, directCommand{}},
		{"X=1 cat", false, directCommand{}},
		{"echo hi", false, directCommand{}},
		{"exec cat", false, directCommand{}},
		{"if true", false, directCommand{}},
		{"cat\nrm x", false, directCommand{}},
		{"cat 2>&2", false, directCommand{}},
	} {
		got, ok := parseDirect(tc.command)
		if ok != tc.ok || ok && (!slices.Equal(got.argv, tc.want.argv) || got.nullStdout != tc.want.nullStdout ||
			got.nullStderr != tc.want.nullStderr || got.stderrToStdout != tc.want.stderrToStdout) {
			t.Errorf("parseDirect(%q) = %+v, %v; want %+v, %v", tc.command, got, ok, tc.want, tc.ok)
		}
	}
}

// parentOf reads the parent pid from the /proc/self/stat line a command printed.
func parentOf(t *testing.T, stat []byte) int {
	t.Helper()
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("stat %q: %v", s, err)
	}
	return ppid
}

// A command that needs no shell runs as the runner's own child; one that does, under
// the shell.
func TestRunWithoutShellWhenNoneIsNeeded(t *testing.T) {
	res := run(t, Spec{Command: "cat /proc/self/stat"})
	if ppid := parentOf(t, res.Tail); ppid != os.Getpid() {
		t.Fatalf("cat's parent is %d, not the runner %d: a shell ran it", ppid, os.Getpid())
	}
	res = run(t, Spec{Command: "cat /proc/self/stat && true"})
	if ppid := parentOf(t, res.Tail); ppid == os.Getpid() {
		t.Fatalf("cat's parent is the runner: no shell ran a command that needs one")
	}
	// A program the PATH does not have is the shell's to report: exit 127, as always.
	res = run(t, Spec{Command: "no-such-program-here --flag"})
	if res.ExitCode != 127 || !strings.Contains(string(res.Tail), "not found") {
		t.Fatalf("missing program: exit %d, output %q; want the shell's 127", res.ExitCode, res.Tail)
	}
	// So is a script without #!, which only a shell runs.
	script := t.TempDir() + "/script"
	if err := os.WriteFile(script, []byte("echo from the script\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res = run(t, Spec{Command: script}); res.ExitCode != 0 || string(res.Tail) != "from the script\n" {
		t.Fatalf("script without #!: exit %d, output %q", res.ExitCode, res.Tail)
	}
}

// Redirections to /dev/null and 2>&1 do what the shell would. ls prints "/" on stdout
// and complains about the missing directory on stderr.
func TestRunWithoutShellRedirects(t *testing.T) {
	const out, errs = "/\n", "no-such-dir"
	for _, tc := range []struct {
		command   string
		has, hasn []string
	}{
		{"ls -d / /no-such-dir", []string{out, errs}, nil},
		{"ls -d / /no-such-dir >/dev/null", []string{errs}, []string{out}},
		{"ls -d / /no-such-dir 2>/dev/null", []string{out}, []string{errs}},
		{"ls -d / /no-such-dir >/dev/null 2>&1", nil, []string{out, errs}},
		{"ls -d / /no-such-dir 2>&1 >/dev/null", []string{errs}, []string{out}},
	} {
		got := string(run(t, Spec{Command: tc.command}).Tail)
		for _, w := range tc.has {
			if !strings.Contains(got, w) {
				t.Errorf("%s: output %q lacks %q", tc.command, got, w)
			}
		}
		for _, w := range tc.hasn {
			if strings.Contains(got, w) {
				t.Errorf("%s: output %q has %q", tc.command, got, w)
			}
		}
	}
}
