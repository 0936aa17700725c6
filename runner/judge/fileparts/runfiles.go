package fileparts

// The files a protected recipe or script runs. Protecting package.json#scripts and
// Makefile#targets keeps the text of the scripts and recipes the contract runs; a
// recipe `test: ; ./scripts/run-tests.sh` still runs whatever the worker wrote into
// scripts/run-tests.sh. FilesRun finds those files, from the base, so the judge
// protects them too.

import (
	"io"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/countersign/countersign/models/formats/shellword"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Bounds of FilesRun: how deep it follows shell scripts into the scripts they run,
// how many shell texts it reads in all.
const (
	maxRunDepth = 8
	maxRunTexts = 256
)

// FilesRun returns protect globs, anchored at the workspace root ("/scripts/test.sh",
// glob characters escaped), for the workspace files that commands run or source,
// transitively: the commands themselves, the package.json scripts and Makefile
// recipes they run (as ScriptsRun and TargetsRun name them, and transitively as
// Restore protects them), and, read with the shell grammar of mvdan.cc/sh, every
// file these execute (`./x.sh`, `scripts/x`, `cd dir && ./x`), source (`. ./env.sh`,
// `source env.sh`), hand to an interpreter (`sh x.sh`, `bash -c "..."`, `node
// scripts/test.js`, `python3 tools/run.py`, `python3 -m tools.run`) or name as a
// configuration or preloaded module (`--config f`, `-c f`, `--require f`,
// `--import f`). A shell script found this way is read in turn, up to maxRunDepth
// deep and maxRunTexts texts in all.
//
// A program run with an interpreter or as ./x that is no shell script is protected
// only when it is the test's tooling (toolingPath: scripts/, tools/, test/, ... or a
// name such as run_tests.py), never the code under test: `python3 main.py < in.txt |
// diff - want.txt` runs what the worker is there to write.
//
// read returns a file of the base revision by its workspace path, ok false when
// there is none or it is no regular file. A path a command runs is protected whether
// or not it exists at base (a worker must not add a script the recipe would run);
// a word that only might be a file (an argument of a command FilesRun does not know,
// after a computed command name such as $(PYTHON)) is protected only if it exists at
// base. Paths outside the workspace (absolute, or climbing out) are not returned:
// the judge's environment owns those.
//
// It must be given the base revision's files: the worker's versions of the scripts
// are what is being judged.
//
// What it cannot see: files that a JavaScript or Python script imports (protect
// those with globs), commands built at run time ($(cat list), eval of a variable
// whose value is computed), files a program reads by its own conventions, the
// package.json of another directory (npm --prefix, workspaces) and makefiles named
// with make -f or -C; with .ONESHELL, a cd on one recipe line is not carried to the
// next.
func FilesRun(commands []string, read func(rel string) ([]byte, bool)) []string {
	r := &runFinder{read: read, files: map[string]bool{}, seenText: map[string]bool{},
		scripts: map[string]bool{}, targets: map[string]bool{}}
	for _, c := range commands {
		r.shell(c, runState{}, 0)
	}
	// Scripts and recipes name more scripts and targets (a recipe running npm test,
	// a shell script running make check): read until no new name turns up.
	for round := 0; round < maxRunDepth; round++ {
		before := len(r.scripts) + len(r.targets)
		r.packageScripts()
		r.makeRecipes()
		if len(r.scripts)+len(r.targets) == before {
			break
		}
	}
	out := make([]string, 0, len(r.files))
	for f := range r.files {
		out = append(out, "/"+escapeGlob(f))
	}
	sort.Strings(out)
	return out
}

// runFinder accumulates what FilesRun finds.
type runFinder struct {
	read     func(string) ([]byte, bool)
	files    map[string]bool
	seenText map[string]bool
	texts    int
	scripts  map[string]bool // package.json scripts named so far
	targets  map[string]bool // Makefile targets named so far
}

// runState is what a shell text has set so far: the directory commands run in
// (relative to the workspace; "?" when unknown) and literal variables.
type runState struct {
	dir  string
	vars map[string]string
}

func (s runState) copy() runState {
	vars := make(map[string]string, len(s.vars))
	for k, v := range s.vars {
		vars[k] = v
	}
	return runState{dir: s.dir, vars: vars}
}

// shell reads text as shell commands in state st.
func (r *runFinder) shell(text string, st runState, depth int) {
	key := st.dir + "\x00" + text
	if depth > maxRunDepth || r.texts >= maxRunTexts || r.seenText[key] {
		return
	}
	r.seenText[key] = true
	r.texts++
	for _, n := range ScriptsRun([]string{text}) {
		r.scripts[n] = true
	}
	for _, t := range TargetsRun([]string{text}) {
		r.targets[t] = true
	}
	f, err := shellword.Parse(text)
	if err != nil {
		// Not shell this grammar reads (a bash extension it lacks, or a hostile
		// text): take the commands the simple splitter sees, none of them resolved.
		for _, words := range shellword.Split(text, false) {
			r.command(words, nil, st, depth)
		}
		return
	}
	r.stmts(f.Stmts, &st, depth)
}

func (r *runFinder) stmts(list []*syntax.Stmt, st *runState, depth int) {
	for _, s := range list {
		r.stmt(s, st, depth)
	}
}

// stmt walks one statement: commands in sequence share st (so `cd dir && ./x`
// resolves ./x in dir); subshells and substitutions get a copy.
func (r *runFinder) stmt(s *syntax.Stmt, st *runState, depth int) {
	if s == nil {
		return
	}
	for _, rd := range s.Redirs {
		r.substs(rd.Word, *st, depth)
		if rd.Hdoc != nil {
			r.substs(rd.Hdoc, *st, depth)
		}
	}
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		r.call(x, s.Redirs, st, depth)
	case *syntax.BinaryCmd:
		r.stmt(x.X, st, depth)
		r.stmt(x.Y, st, depth)
	case *syntax.Block:
		r.stmts(x.Stmts, st, depth)
	case *syntax.Subshell:
		c := st.copy()
		r.stmts(x.Stmts, &c, depth)
	case *syntax.IfClause:
		for c := x; c != nil; c = c.Else {
			r.stmts(c.Cond, st, depth)
			r.stmts(c.Then, st, depth)
		}
	case *syntax.WhileClause:
		r.stmts(x.Cond, st, depth)
		r.stmts(x.Do, st, depth)
	case *syntax.ForClause:
		r.stmts(x.Do, st, depth)
	case *syntax.CaseClause:
		for _, it := range x.Items {
			r.stmts(it.Stmts, st, depth)
		}
	case *syntax.FuncDecl:
		c := st.copy()
		r.stmt(x.Body, &c, depth)
	case *syntax.TimeClause:
		r.stmt(x.Stmt, st, depth)
	case *syntax.CoprocClause:
		r.stmt(x.Stmt, st, depth)
	default:
		if x != nil {
			r.substs(x, *st, depth)
		}
	}
}

// substs walks the command and process substitutions inside node, each in a copy
// of st.
func (r *runFinder) substs(node syntax.Node, st runState, depth int) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			c := st.copy()
			r.stmts(x.Stmts, &c, depth)
			return false
		case *syntax.ProcSubst:
			c := st.copy()
			r.stmts(x.Stmts, &c, depth)
			return false
		}
		return true
	})
}

// call handles a simple command: assignments, cd, and what it runs.
func (r *runFinder) call(x *syntax.CallExpr, redirs []*syntax.Redirect, st *runState, depth int) {
	for _, a := range x.Assigns {
		r.substs(a, *st, depth)
		if v, ok := r.literal(a.Value, *st); ok && a.Value != nil && len(x.Args) == 0 {
			if st.vars == nil {
				st.vars = map[string]string{}
			}
			st.vars[a.Name.Value] = v
		}
	}
	words := make([]string, len(x.Args))
	known := make([]bool, len(x.Args))
	for i, w := range x.Args {
		r.substs(w, *st, depth)
		words[i], known[i] = r.literal(w, *st)
	}
	if len(words) > 0 && known[0] && (words[0] == "cd" || words[0] == "pushd") {
		st.dir = cdTo(st.dir, words[1:], known[1:])
		return
	}
	var stdin string
	for _, rd := range redirs {
		if rd.Op == syntax.RdrIn {
			stdin, _ = r.literal(rd.Word, *st)
		}
		if rd.Hdoc != nil && (rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc) && len(words) > 0 && shells[path.Base(words[0])] {
			if body, ok := r.literal(rd.Hdoc, *st); ok {
				r.shell(body, st.copy(), depth+1)
			}
		}
	}
	r.commandIn(words, known, stdin, *st, depth)
}

// cdTo is the directory after `cd args` in dir: "?" when it cannot be known.
func cdTo(dir string, args []string, known []bool) string {
	for i, a := range args {
		if a == "--" || (strings.HasPrefix(a, "-") && a != "-") {
			continue
		}
		if !known[i] || a == "-" || path.IsAbs(a) || strings.HasPrefix(a, "~") || dir == "?" {
			return "?"
		}
		j := path.Clean(path.Join(dir, a))
		if j == "." {
			return ""
		}
		if j == ".." || strings.HasPrefix(j, "../") {
			return "?"
		}
		return j
	}
	return ""
}

// literal is a word's value with quotes removed and st's variables expanded; ok is
// false when it depends on anything else (another variable, a substitution).
func (r *runFinder) literal(w *syntax.Word, st runState) (string, bool) {
	if w == nil {
		return "", true
	}
	var pairs []string
	for k, v := range st.vars {
		pairs = append(pairs, k+"="+v)
	}
	return wordValue(expand.ListEnviron(pairs...), w)
}

// wordValue expands w as the shell does for a command's argument (quotes and
// backslashes removed, variables from env), without splitting it into fields or
// globbing; an unset variable or a substitution substValue does not evaluate makes
// ok false.
func wordValue(env expand.Environ, w *syntax.Word) (string, bool) {
	cfg := &expand.Config{Env: env, NoUnset: true}
	cfg.CmdSubst = func(out io.Writer, cs *syntax.CmdSubst) error { return substValue(env, out, cs) }
	fields, err := expand.Fields(cfg, w)
	if err != nil {
		return "", false
	}
	return strings.Join(fields, " "), true
}

// command handles a word list from the fallback splitter: all words taken as written.
func (r *runFinder) command(words []string, _ []bool, st runState, depth int) {
	known := make([]bool, len(words))
	for i, w := range words {
		known[i] = !strings.ContainsAny(w, "$`")
	}
	r.commandIn(words, known, "", st, depth)
}

var (
	shells       = setOf("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox")
	interpreters = setOf("node", "nodejs", "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby",
		"php", "deno", "bun", "tsx", "ts-node", "Rscript", "lua", "tclsh", "osascript")
	// codeOptions take program text, not a file, as their value.
	codeOptions = setOf("-c", "-e", "--eval", "-p", "--print", "-E")
	// fileOptions name a file the program loads: configuration, preloaded modules.
	// -c and -r are files only for some programs (see options): gcc -c main.c.
	fileOptions = setOf("--config", "--require", "--import", "--loader", "--experimental-loader",
		"--env-file", "--rcfile", "--setupFiles", "--setup-files", "--setupFilesAfterEnv", "--globalSetup",
		"--globalTeardown", "--file", "--config-file", "--configfile", "--inifile", "--tsconfig", "--project")
	pythonRe = regexp.MustCompile(`^python[0-9.]*$`)
)

func setOf(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}
