// Package shellword is the one shell-word grammar: every reading of a shell
// command line in Countersign goes through it. Parse is the syntax tree (bash's
// grammar, mvdan.cc/sh); Plain and Simple read a command line exactly as a shell
// would, from that tree, and give up on what they cannot be sure of; Split is the
// over-approximating reading the judge uses to find what commands may run, which
// never gives up. Its importers: models (readiness: the programs a command
// runs), the worker (runner/worker) and the judge (runner/judge/fileparts);
// models/formats/onehome_test.go forbids a second shell parser.
package shellword

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Parse parses src as bash. This package is the only place a shell parser is
// made, so every caller reads the same grammar.
func Parse(src string) (*syntax.File, error) { return parse(src, false) }

func parse(src string, comments bool) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(comments)).Parse(strings.NewReader(src), "")
}

// Word is one word of a simple command as the shell hands it to the program.
type Word struct {
	Text     string // quotes removed
	Quoted   bool   // some of it was quoted
	Expands  bool   // the shell would expand it: $, `, an unquoted glob or leading ~
	Redirect bool   // a redirection, written whole ("2>&1", ">/dev/null")
	Assigns  bool   // NAME=value with the name unquoted (an assignment before a program)
}

// Plain returns the words of command when it is one simple command whose words a
// shell passes on as written: plain characters (letters, digits, -_./:=@%+,),
// single-quoted text and double-quoted text with nothing to expand, and
// redirections written without a blank (">/dev/null", "2>&1"), in the order
// written. ok is false for anything else: expansions, globs, escapes, comments,
// operators, assignments, a second command or text the grammar cannot read.
func Plain(command string) (words []Word, ok bool) {
	f, err := parse(command, true) // a comment is a reason to give up
	if err != nil || len(f.Stmts) != 1 || len(f.Last) > 0 {
		return nil, false
	}
	st := f.Stmts[0]
	call, isCall := st.Cmd.(*syntax.CallExpr)
	if len(st.Comments) > 0 || st.Negated || st.Background || st.Coprocess || st.Semicolon.IsValid() ||
		!isCall || len(call.Assigns) > 0 {
		return nil, false
	}
	type posWord struct {
		pos uint
		w   Word
	}
	var all []posWord
	for _, a := range call.Args {
		w, ok := plainWord(a)
		if !ok {
			return nil, false
		}
		all = append(all, posWord{a.Pos().Offset(), w})
	}
	for _, r := range st.Redirs {
		w, ok := plainRedirect(command, r)
		if !ok {
			return nil, false
		}
		all = append(all, posWord{r.Pos().Offset(), w})
	}
	for i := 1; i < len(all); i++ { // insertion sort: a handful of words
		for j := i; j > 0 && all[j].pos < all[j-1].pos; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	for _, p := range all {
		words = append(words, p.w)
	}
	return words, true
}

// plainWord reads a word of plain characters and quotes with nothing to expand.
func plainWord(w *syntax.Word) (Word, bool) {
	var out Word
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if !isPlain(p.Value) {
				return Word{}, false
			}
			out.Text += p.Value
		case *syntax.SglQuoted:
			if p.Dollar {
				return Word{}, false
			}
			out.Text, out.Quoted = out.Text+p.Value, true
		case *syntax.DblQuoted:
			if p.Dollar {
				return Word{}, false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(lit.Value, "$`\\") {
					return Word{}, false
				}
				out.Text += lit.Value
			}
			out.Quoted = true
		default:
			return Word{}, false
		}
	}
	return out, true
}

// plainRedirect reads a redirection written as one word (">/dev/null", "2>&1")
// with a plain target; the caller decides which it allows.
func plainRedirect(src string, r *syntax.Redirect) (Word, bool) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.DplOut:
	default:
		return Word{}, false
	}
	if r.Word == nil || r.Hdoc != nil {
		return Word{}, false
	}
	w, ok := plainWord(r.Word)
	start, end := r.Pos().Offset(), r.End().Offset()
	if !ok || w.Quoted || end > uint(len(src)) || strings.ContainsAny(src[start:end], " \t\\") {
		return Word{}, false
	}
	return Word{Text: src[start:end], Redirect: true}, true
}

// isPlain reports whether every byte of s means itself to a shell anywhere in a
// word.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-_./:=@%+,", c) >= 0:
		default:
			return false
		}
	}
	return true
}
