package fileparts

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/countersign/countersign/models/formats/pkgjson"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// commandIn handles one simple command's words (known[i]: words[i] is literal):
// what it runs, sources or loads.
func (r *runFinder) commandIn(words []string, known []bool, stdin string, st runState, depth int) {
	idx := commandWords(words)
	for _, i := range idx {
		args, argKnown := words[i+1:], known[i+1:]
		if !known[i] {
			r.maybeFiles(args, argKnown, st)
			continue
		}
		w := words[i]
		b := path.Base(w)
		switch {
		case w == "." || w == "source":
			if len(args) > 0 && argKnown[0] {
				r.run(args[0], st, depth, true, true)
			}
			return
		case w == "eval" || w == "builtin" && len(args) > 0 && args[0] == "eval":
			r.shell(strings.Join(args, " "), st.copy(), depth+1)
			return
		case shells[b]:
			r.shellArgs(args, argKnown, stdin, st, depth)
			return
		case interpreters[b] || pythonRe.MatchString(b):
			r.interpreter(b, args, argKnown, st, depth)
			return
		case strings.Contains(w, "/"):
			r.run(w, st, depth, false, false)
			r.options(b, args, argKnown, st)
			return
		}
	}
	if len(idx) > 0 {
		i := idx[len(idx)-1]
		r.options(path.Base(words[i]), words[i+1:], known[i+1:], st)
	}
}

// shellArgs handles `sh [options] [script | -c text]`, the script read from stdin
// when none is named.
func (r *runFinder) shellArgs(args []string, known []bool, stdin string, st runState, depth int) {
	for k := 0; k < len(args); k++ {
		a := args[k]
		switch {
		case a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "c")):
			if k+1 < len(args) {
				r.shell(args[k+1], st.copy(), depth+1) // an unknown text is taken as written
			}
			return
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			if a == "--rcfile" || a == "--init-file" {
				if k+1 < len(args) && known[k+1] {
					r.run(args[k+1], st, depth, true, true)
				}
			}
			k++
		case a == "--" || a == "-s":
			continue
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			continue
		default:
			if known[k] {
				r.run(a, st, depth, true, false)
			}
			return
		}
	}
	if stdin != "" {
		r.run(stdin, st, depth, true, false)
	}
}

// interpreterValueOptions take the next word as their value.
var interpreterValueOptions = setOf("-W", "-X", "-C", "--conditions", "--input-type", "--title", "-I", "-x")

// interpreter handles `node [options] script`, `python3 -m module`, `deno run x.ts`.
func (r *runFinder) interpreter(b string, args []string, known []bool, st runState, depth int) {
	r.options(b, args, known, st)
	test := false
	for k := 0; k < len(args); k++ {
		a := args[k]
		switch {
		case codeOptions[a]:
			return // program text, not a file
		case a == "-m" && pythonRe.MatchString(b) && k+1 < len(args):
			if known[k+1] {
				mod := strings.ReplaceAll(args[k+1], ".", "/")
				for _, f := range []string{mod + ".py", mod + "/__init__.py", mod + "/__main__.py"} {
					r.run(f, st, depth, false, false)
				}
			}
			return
		case a == "--test":
			test = true
		case fileOptions[a] || interpreterValueOptions[a] || (a == "-r" && !pythonRe.MatchString(b)):
			k++
		case strings.HasPrefix(a, "-"):
		case (b == "deno" || b == "bun") && (a == "run" || a == "test" || a == "x"):
		default:
			if !known[k] {
				return
			}
			if !test {
				r.run(a, st, depth, false, false)
				return
			}
			if rel, _ := resolve(st.dir, a); rel != "" {
				if _, ok := r.read(rel); ok {
					r.files[rel] = true // node --test file.js: an explicit test file
				}
			}
		}
	}
}

// options protects the files named by fileOptions (and, for the programs that
// read them so, -c and -r) in a command's arguments.
func (r *runFinder) options(b string, args []string, known []bool, st runState) {
	short := map[string]bool{}
	switch b {
	case "pytest", "py.test":
		short["-c"] = true
		r.pytestPlugins(args, known, st)
	case "mocha", "ava", "node", "ts-node", "tsx", "nodejs", "_mocha":
		short["-r"] = true
	}
	for k, a := range args {
		if a == "--" {
			return
		}
		name, val, eq := strings.Cut(a, "=")
		if !fileOptions[name] && !short[name] {
			continue
		}
		if !eq {
			if k+1 >= len(args) || !known[k+1] {
				continue
			}
			val = args[k+1]
		} else if !known[k] {
			continue
		}
		if rel, _ := resolve(st.dir, val); rel != "" && !strings.HasPrefix(val, "-") {
			if strings.Contains(val, "/") || strings.Contains(path.Base(val), ".") {
				r.files[rel] = true // a module name (--require ts-node/register) may be no file: harmless
			}
		}
	}
}

// maybeFiles protects the arguments of a command FilesRun cannot name (a computed
// command word) that are files at base: perhaps the script an interpreter runs.
func (r *runFinder) maybeFiles(args []string, known []bool, st runState) {
	for k, a := range args {
		if !known[k] || strings.HasPrefix(a, "-") {
			continue
		}
		if rel, _ := resolve(st.dir, a); rel != "" {
			if data, ok := r.read(rel); ok && looksRunnable(rel, data) && (looksShell(rel, data) || toolingPath(rel)) {
				r.files[rel] = true
			}
		}
	}
}

// run protects the file p that a command runs (asShell: as a shell script, sourced
// or not) and reads it in turn when it is a shell script at base.
func (r *runFinder) run(p string, st runState, depth int, asShell, sourced bool) {
	rel, certain := resolve(st.dir, p)
	if rel == "" {
		return
	}
	data, ok := r.read(rel)
	shell := asShell || looksShell(rel, data)
	if !certain && !ok || !shell && !toolingPath(rel) {
		return
	}
	r.files[rel] = true
	if !ok || !shell || len(data) > MaxFileBytes || bytes.IndexByte(data, 0) >= 0 {
		return
	}
	next := runState{dir: st.dir, vars: map[string]string{"0": p, "BASH_SOURCE": p}}
	if sourced {
		next = st.copy()
		next.vars["BASH_SOURCE"] = p
	}
	r.shell(string(data), next, depth+1)
}

// toolingDirs are the top-level directories that hold a project's scripts and
// tests rather than its code.
var toolingDirs = setOf("scripts", "script", "tools", "tool", "ci", ".ci", "test", "tests", "spec", "specs",
	"hack", "e2e", ".github", ".circleci", ".gitlab", "build-aux", "dev")

var toolingName = regexp.MustCompile(`(?i)test|check|verify|spec|lint|runner|harness|conftest`)

// toolingPath reports whether a program that a protected recipe or script runs with
// an interpreter (node x.js, python3 x.py, ./x) is the test's tooling, to protect,
// rather than the code under test, which the worker is there to change: `test:
// python3 main.py < in.txt | diff - want.txt` runs the program being written.
// Tooling is a file in a top-level tooling directory (scripts/, tools/, ci/, test/,
// ...) or one whose name says so (run_tests.py, check.js); shell scripts are always
// tooling and do not ask.
func toolingPath(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return strings.Contains(rel, "/") && toolingDirs[first] || toolingName.MatchString(path.Base(rel))
}

// resolve is p relative to the workspace, run in dir; "" when it is outside it.
// certain is false when dir is unknown and p is only guessed relative to the root.
func resolve(dir, p string) (string, bool) {
	if p == "" || path.IsAbs(p) || strings.HasPrefix(p, "~") || strings.ContainsRune(p, 0) {
		return "", false
	}
	certain := dir != "?"
	if !certain {
		dir = ""
	}
	rel := path.Clean(path.Join(dir, p))
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, certain
}

var shebangShell = regexp.MustCompile(`^#![^\n]*\b(sh|bash|dash|zsh|ksh|ash|mksh)\b`)

// looksShell reports whether a file is a shell script: by extension, or by its
// #! line when it has none.
func looksShell(rel string, data []byte) bool {
	switch path.Ext(rel) {
	case ".sh", ".bash", ".zsh", ".ksh", ".dash":
		return true
	case "":
		return shebangShell.Match(data)
	}
	return false
}

// looksRunnable reports whether a file is a script some interpreter runs.
func looksRunnable(rel string, data []byte) bool {
	switch path.Ext(rel) {
	case ".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".pl", ".rb", ".php", ".lua", ".R":
		return true
	}
	return bytes.HasPrefix(data, []byte("#!"))
}

// escapeGlob escapes the characters path.Match reads as a pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// errNoSubst: a command substitution FilesRun does not evaluate.
var errNoSubst = errors.New("fileparts: command substitution not evaluated")

// substValue evaluates the substitutions scripts use to find their own directory:
// $(dirname W), $(basename W), $(pwd), $(cd W && pwd), giving paths relative to
// the workspace as the rest of FilesRun does.
func substValue(env expand.Environ, w io.Writer, cs *syntax.CmdSubst) error {
	dir := "."
	stmts := flatten(cs.Stmts)
	for i, s := range stmts {
		call, ok := s.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
			return errNoSubst
		}
		args := make([]string, len(call.Args))
		for k, a := range call.Args {
			v, ok := wordValue(env, a)
			if !ok {
				return errNoSubst
			}
			args[k] = v
		}
		last := i == len(stmts)-1
		switch {
		case args[0] == "cd" && len(args) == 2 && !last:
			dir = path.Join(dir, args[1])
		case args[0] == "pwd" && last:
			_, err := io.WriteString(w, dir)
			return err
		case args[0] == "dirname" && len(args) == 2 && last:
			_, err := io.WriteString(w, path.Dir(args[1]))
			return err
		case args[0] == "basename" && len(args) == 2 && last:
			_, err := io.WriteString(w, path.Base(args[1]))
			return err
		default:
			return errNoSubst
		}
	}
	return errNoSubst
}

// flatten lists the statements of `a && b; c` in order (nil for anything else).
func flatten(list []*syntax.Stmt) []*syntax.Stmt {
	var out []*syntax.Stmt
	for _, s := range list {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.AndStmt {
			out = append(out, flatten([]*syntax.Stmt{b.X})...)
			out = append(out, flatten([]*syntax.Stmt{b.Y})...)
			continue
		}
		out = append(out, s)
	}
	return out
}

// packageScripts reads the base package.json's scripts that the names found so far
// run (with Restore's closure: hooks, scripts they run) as shell.
func (r *runFinder) packageScripts() {
	if len(r.scripts) == 0 {
		return
	}
	doc, ok := r.read("package.json")
	if !ok || len(doc) > MaxFileBytes {
		return
	}
	obj, ok := pkgjson.Scan(doc)
	if !ok {
		return
	}
	top, _ := obj.Effective()
	sm, ok := top["scripts"]
	if !ok || doc[sm.ValStart] != '{' {
		return
	}
	sobj, ok := pkgjson.ScanObject(doc, sm.ValStart)
	if !ok {
		return
	}
	bm, _ := sobj.Effective()
	isProt := scriptSet(setList(r.scripts), doc, bm)
	for _, name := range sortedKeys(bm) {
		var body string
		if !isProt(name) || json.Unmarshal(doc[bm[name].ValStart:bm[name].ValEnd], &body) != nil {
			continue
		}
		r.shell(body, runState{}, 1)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortedNames(out)
}

// pytestPlugins protects the modules `pytest -p name` loads as plugins, which a file
// at the root provides first.
func (r *runFinder) pytestPlugins(args []string, known []bool, st runState) {
	for k := 0; k+1 < len(args); k++ {
		if args[k] != "-p" || !known[k+1] || strings.HasPrefix(args[k+1], "no:") {
			continue
		}
		mod := strings.ReplaceAll(args[k+1], ".", "/")
		for _, f := range []string{mod + ".py", mod + "/__init__.py"} {
			if rel, _ := resolve(st.dir, f); rel != "" {
				r.files[rel] = true
			}
		}
	}
}
