package fileparts

// go.mod parts (go.mod#replace, go.mod#require, go.mod#toolchain, ...): the lines of
// one directive, as the go command reads them. A replace line swaps the code of a
// module the tests import ("replace github.com/stretchr/testify => ./fake"), a
// require line picks its version, go and toolchain pick the compiler, godebug the
// runtime's behaviour.
//
// The file is read with golang.org/x/mod/modfile, the go command's own parser. A
// directive's lines compare as a set of token lists: order, blocks versus single
// lines, comments and spacing are not changes (the go command reads them the same).
// When they differ, the judged file is the worker's syntax tree with its lines of
// that directive removed and the base's put in their place, printed by modfile's
// formatter; it is then read again and must hold exactly the base's lines of the
// directive and the worker's of every other, or the judged file is the base's whole.

import (
	"errors"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// goModDirectives are the go.mod directives a part may name.
var goModDirectives = map[string]bool{
	"go": true, "toolchain": true, "godebug": true, "require": true, "exclude": true,
	"replace": true, "retract": true, "tool": true, "ignore": true,
}

// isGoMod reports whether file is a go.mod by name.
func isGoMod(file string) bool { return baseName(file) == "go.mod" }

func baseName(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}

// goModLines returns the lines of directive verb in f, each as its tokens joined by
// a space after the verb ("github.com/x v1.2.0 => ./x"), sorted.
func goModLines(f *modfile.FileSyntax, verb string) []string {
	var out []string
	for _, st := range f.Stmt {
		switch x := st.(type) {
		case *modfile.Line:
			if len(x.Token) > 0 && x.Token[0] == verb {
				out = append(out, strings.Join(x.Token[1:], " "))
			}
		case *modfile.LineBlock:
			if len(x.Token) == 1 && x.Token[0] == verb {
				for _, l := range x.Line {
					out = append(out, strings.Join(l.Token, " "))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// otherLines is every statement of f not of directive verb, as text, for checking
// that a splice left them alone.
func otherLines(f *modfile.FileSyntax, verb string) []string {
	var out []string
	for _, st := range f.Stmt {
		switch x := st.(type) {
		case *modfile.Line:
			if len(x.Token) > 0 && x.Token[0] != verb {
				out = append(out, strings.Join(x.Token, " "))
			}
		case *modfile.LineBlock:
			if len(x.Token) == 1 && x.Token[0] != verb {
				for _, l := range x.Line {
					out = append(out, x.Token[0]+" "+strings.Join(l.Token, " "))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func parseGoMod(data []byte) (*modfile.FileSyntax, bool) {
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil || f.Syntax == nil {
		return nil, false
	}
	return f.Syntax, true
}

// goModNames names the lines that differ between a and b: "replace github.com/x",
// "go", "godebug panicnil".
func goModNames(verb string, a, b []string) []string {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var names []string
	for l, n := range count {
		if n == 0 {
			continue
		}
		name := verb
		if f := strings.Fields(l); len(f) > 0 && verb != "go" && verb != "toolchain" {
			name += " " + strings.SplitN(f[0], "=", 2)[0]
		}
		names = append(names, name)
	}
	return sortedNames(names)
}

// restoreGoMod is Restore for a go.mod directive part.
func restoreGoMod(verb string, base, worker []byte) ([]byte, []string, error) {
	if base == nil && worker == nil {
		return nil, nil, nil
	}
	var bf *modfile.FileSyntax
	var bl []string
	if base != nil {
		var ok bool
		if bf, ok = parseGoMod(base); !ok {
			return nil, nil, errors.New("fileparts: the base go.mod cannot be read")
		}
		bl = goModLines(bf, verb)
	}
	if worker == nil {
		if len(bl) == 0 {
			return nil, nil, nil
		}
		return clone(base), sortedNames(goModNames(verb, bl, nil), WholeFile), nil
	}
	wf, ok := parseGoMod(worker)
	if !ok {
		return wholeBase(base, worker, []string{verb})
	}
	wl := goModLines(wf, verb)
	if equalStrings(bl, wl) {
		return clone(worker), nil, nil
	}
	changed := goModNames(verb, bl, wl)
	var stmts []modfile.Expr
	for _, st := range wf.Stmt {
		if !isVerbStmt(st, verb) {
			stmts = append(stmts, st)
		}
	}
	if bf != nil {
		for _, st := range bf.Stmt {
			if isVerbStmt(st, verb) {
				stmts = append(stmts, st)
			}
		}
	}
	judged := modfile.Format(&modfile.FileSyntax{Name: "go.mod", Comments: wf.Comments, Stmt: stmts})
	jf, ok := parseGoMod(judged)
	if !ok || !equalStrings(goModLines(jf, verb), bl) || !equalStrings(otherLines(jf, verb), otherLines(wf, verb)) {
		return wholeBase(base, worker, changed)
	}
	return judged, changed, nil
}

func isVerbStmt(st modfile.Expr, verb string) bool {
	switch x := st.(type) {
	case *modfile.Line:
		return len(x.Token) > 0 && x.Token[0] == verb
	case *modfile.LineBlock:
		return len(x.Token) == 1 && x.Token[0] == verb
	}
	return false
}
