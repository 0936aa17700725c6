package shellword

import (
	"strings"

	"github.com/countersign/countersign/models/formats/makefile"
)

// The over-approximating reading, for finding what commands may run: it never
// fails, and it reads more commands than a shell would rather than fewer.

// Split splits a shell command line into simple commands, each a list of
// words with quotes removed. It is not a shell: it splits at every operator
// (; & | ( ) newline, backquote, $( ), keeps redirections such as 2>&1 in one word,
// and also returns, recursively, the commands inside each quoted string. With
// makeRefs (recipe text), make references $(...) and ${...} are kept whole inside
// words and $$ is a literal $.
func Split(s string, makeRefs bool) [][]string { return split(s, makeRefs, 0) }

func split(s string, makeRefs bool, depth int) [][]string {
	sp := &splitter{s: s, makeRefs: makeRefs}
	for i := 0; i < len(s); {
		i = sp.step(i)
	}
	sp.flushCmd()
	if depth < 4 {
		for _, q := range sp.quoted {
			if strings.ContainsAny(q, " \t\n;&|") {
				sp.cmds = append(sp.cmds, split(q, makeRefs, depth+1)...)
			}
		}
	}
	return sp.cmds
}

// splitter is Split's state: the commands so far, the current one and its word,
// and the quoted strings seen (read again as commands).
type splitter struct {
	s        string
	makeRefs bool
	cmds     [][]string
	cur      []string
	word     strings.Builder
	inWord   bool
	quoted   []string
}

func (sp *splitter) flushWord() {
	if sp.inWord {
		sp.cur = append(sp.cur, sp.word.String())
		sp.word.Reset()
		sp.inWord = false
	}
}

func (sp *splitter) flushCmd() {
	sp.flushWord()
	if len(sp.cur) > 0 {
		sp.cmds = append(sp.cmds, sp.cur)
		sp.cur = nil
	}
}

// add appends text to the current word.
func (sp *splitter) add(text string) {
	sp.word.WriteString(text)
	sp.inWord = true
}

// step reads what starts at s[i] and returns where the next thing starts.
func (sp *splitter) step(i int) int {
	s, c := sp.s, sp.s[i]
	switch {
	case sp.makeRefs && c == '$' && i+1 < len(s) && s[i+1] == '$':
		sp.add("$")
		return i + 2
	case sp.makeRefs && c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
		e := makefile.SkipRef(s, i)
		sp.add(s[i:e])
		return e
	case c == '\\' && i+1 < len(s):
		if s[i+1] != '\n' {
			sp.add(s[i+1 : i+2])
		}
		return i + 2
	case c == '\'':
		return sp.singleQuoted(i)
	case c == '"':
		return sp.doubleQuoted(i)
	case c == ' ' || c == '\t' || c == '\r':
		sp.flushWord()
	case c == '&' && sp.inWord && strings.HasSuffix(sp.word.String(), ">"),
		c == '&' && i+1 < len(s) && s[i+1] == '>':
		sp.add("&") // 2>&1, &>file
	case c == '$' && i+1 < len(s) && s[i+1] == '(':
		sp.flushCmd()
		return i + 2
	case strings.IndexByte(";&|()\n`", c) >= 0:
		sp.flushCmd()
	default:
		sp.add(s[i : i+1])
	}
	return i + 1
}

// singleQuoted reads '…' starting at s[i] (to the end when unclosed).
func (sp *splitter) singleQuoted(i int) int {
	s := sp.s
	end := len(s)
	if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
		end = i + 1 + j
	}
	sp.add(s[i+1 : end])
	sp.quoted = append(sp.quoted, s[i+1:end])
	return end + 1
}

// doubleQuoted reads "…" starting at s[i], a backslash taking the next byte as
// itself.
func (sp *splitter) doubleQuoted(i int) int {
	s := sp.s
	var q strings.Builder
	j := i + 1
	for j < len(s) && s[j] != '"' {
		if s[j] == '\\' && j+1 < len(s) {
			q.WriteByte(s[j+1])
			j += 2
			continue
		}
		q.WriteByte(s[j])
		j++
	}
	sp.add(q.String())
	sp.quoted = append(sp.quoted, q.String())
	return j + 1
}
