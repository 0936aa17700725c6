package shellword

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Simple returns the simple commands of a command line as a shell reads them, in
// order, each with its assignments (Assigns) and then its arguments (redirections
// left out), and the names of the functions it defines (`name() {…}`, `function
// name {…}`). Commands inside command and process substitutions and arithmetic
// are not read: what they run is known only when the shell expands them. ok is
// false when the grammar cannot read the line.
func Simple(command string) (cmds [][]Word, funcs map[string]bool, ok bool) {
	f, err := Parse(command)
	if err != nil {
		return nil, nil, false
	}
	funcs = map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp, *syntax.ArithmCmd:
			return false
		case *syntax.FuncDecl:
			funcs[n.Name.Value] = true
		case *syntax.CallExpr:
			var words []Word
			for _, a := range n.Assigns {
				words = append(words, Word{Text: a.Name.Value + "=", Assigns: true})
			}
			for _, a := range n.Args {
				words = append(words, readWord(a))
			}
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
		}
		return true
	})
	return cmds, funcs, true
}

// readWord returns a word's text with quotes removed and whether the shell would
// expand it or it is an assignment.
func readWord(w *syntax.Word) Word {
	var out Word
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") || (i == 0 && strings.HasPrefix(p.Value, "~")) {
				out.Expands = true
			}
			if i == 0 {
				out.Assigns = IsAssignment(p.Value)
			}
			out.Text += unescape(p.Value, false)
		case *syntax.SglQuoted:
			out.Text, out.Quoted = out.Text+p.Value, true
			out.Expands = out.Expands || p.Dollar
		case *syntax.DblQuoted:
			out.Quoted = true
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					out.Text += unescape(lit.Value, true)
				} else {
					out.Expands = true
				}
			}
		default:
			out.Expands = true
		}
	}
	return out
}

// unescape removes the backslashes a literal's backslashes give a meaning:
// before any byte outside quotes (a\ b is "a b"), before $ ` " \ and a newline
// inside double quotes; a backslash and newline go together (a continuation).
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!dquoted || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// IsAssignment reports whether a word is NAME=value: a name of letters, digits
// and underscores, not starting with a digit, before the first '='.
func IsAssignment(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
