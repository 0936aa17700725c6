package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models/formats/shellword"
	"github.com/countersign/countersign/runner/sandbox"
)

// A shell costs a process of its own: on a machine where starting a process is slow,
// `sh -c 'cat >/dev/null'` takes twice as long as cat alone. So a Command that needs
// nothing of the shell — one program, plain arguments, at most redirections to
// /dev/null or of stderr to stdout — is exec'd directly (see direct). Everything else,
// and anything direct cannot be sure of, goes to the shell as before.

// directCommand is a Command that runs without a shell: the program and its arguments,
// and the redirections it asked for.
type directCommand struct {
	argv       []string
	nullStdout bool // stdout goes to /dev/null
	nullStderr bool // stderr goes to /dev/null
	// stderrToStdout says stderr goes where stdout went (2>&1) when it was read:
	// checked before nullStdout was set by a later >/dev/null.
	stderrToStdout bool
}

// shellOnly are the words a shell runs itself or parses as grammar: a command starting
// with one keeps its shell, whose builtin may differ from a program of the same name
// (dash's echo interprets backslashes, /bin/echo does not).
var shellOnly = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "cd": true, "command": true,
	"continue": true, "eval": true, "exec": true, "exit": true, "export": true, "false": true, "fg": true,
	"getopts": true, "hash": true, "jobs": true, "kill": true, "local": true, "printf": true, "pwd": true,
	"read": true, "readonly": true, "return": true, "set": true, "shift": true, "test": true, "times": true,
	"trap": true, "true": true, "type": true, "ulimit": true, "umask": true, "unalias": true, "unset": true,
	"wait": true, "echo": true, "source": true,
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true, "for": true,
	"while": true, "until": true, "do": true, "done": true, "in": true, "function": true, "select": true,
	"time": true, "!": true, "{": true, "}": true,
}

// parseDirect returns command as a directCommand when a POSIX shell would run it as
// one program with these arguments and these redirections, and ok=false whenever it
// might do anything else: expansions ($, `, ~, globs), operators (; & | < ( ) and
// newlines), comments, escapes, assignments, builtins and keywords.
func parseDirect(command string) (dc directCommand, ok bool) {
	words, ok := shellword.Plain(command)
	if !ok || len(words) == 0 {
		return directCommand{}, false
	}
	for _, w := range words {
		switch {
		case w.Quoted || !strings.ContainsRune(w.Text, '>'):
			if len(dc.argv) == 0 && (shellOnly[w.Text] && !w.Quoted || strings.ContainsRune(w.Text, '=')) {
				return directCommand{}, false
			}
			dc.argv = append(dc.argv, w.Text)
		case w.Text == ">/dev/null" || w.Text == "1>/dev/null":
			dc.nullStdout = true
		case w.Text == "2>/dev/null":
			dc.nullStderr, dc.stderrToStdout = true, false
		case w.Text == "2>&1":
			dc.nullStderr, dc.stderrToStdout = dc.nullStdout, !dc.nullStdout
		default:
			return directCommand{}, false
		}
	}
	return dc, len(dc.argv) > 0
}

// lookPathIn finds file in the PATH of env the way a shell would, returning "" when
// it is not an executable regular file there: the shell then runs the command, and
// reports a missing program (127) as it always has.
func lookPathIn(file string, env []string) string {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			return ""
		}
		return executable(file)
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one wins, as in the child
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			return "" // "" or a relative entry names the working directory: leave it to the shell
		}
		if p := executable(filepath.Join(d, file)); p != "" {
			return p
		}
	}
	return ""
}

// executable returns path when it is a regular file someone may execute.
func executable(path string) string {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return path
}

// startDirect starts command without a shell when parseDirect and lookPathIn allow
// it, through newCmd (which sets the run's environment, stdin and pipes) and sb. It
// returns nil, having started nothing, when the shell must run command instead: it
// does not qualify, or its start failed.
func startDirect(command string, newCmd func(argv []string) *exec.Cmd, sb *sandbox.Sandbox, p sandbox.Policy,
	whileRunning func(*exec.Cmd) func()) *exec.Cmd {
	dc, ok := parseDirect(command)
	if !ok {
		return nil
	}
	cmd := newCmd(dc.argv)
	path := lookPathIn(dc.argv[0], cmd.Env)
	if path == "" {
		return nil
	}
	cmd.Path, cmd.Err = path, nil
	if dc.nullStdout || dc.nullStderr {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil
		}
		defer null.Close() // the child has its copy once started
		stdout := cmd.Stdout
		if dc.nullStdout {
			cmd.Stdout = null
		}
		switch {
		case dc.nullStderr:
			cmd.Stderr = null
		case dc.stderrToStdout:
			cmd.Stderr = stdout
		}
	} else if dc.stderrToStdout {
		cmd.Stderr = cmd.Stdout
	}
	if err := sb.Start(cmd, p, whileRunning(cmd)); err != nil {
		return nil
	}
	return cmd
}
