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
	var cmds [][]string
	var cur []string
	var word strings.Builder
	inWord := false
	var quoted []string
	flushWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case makeRefs && c == '$' && i+1 < len(s) && s[i+1] == '$':
			word.WriteByte('$')
			inWord = true
			i += 2
		case makeRefs && c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			e := makefile.SkipRef(s, i)
			word.WriteString(s[i:e])
			inWord = true
			i = e
		case c == '\\' && i+1 < len(s):
			if s[i+1] != '\n' {
				word.WriteByte(s[i+1])
				inWord = true
			}
			i += 2
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			end := len(s)
			if j >= 0 {
				end = i + 1 + j
			}
			word.WriteString(s[i+1 : end])
			quoted = append(quoted, s[i+1:end])
			inWord = true
			i = end + 1
		case c == '"':
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
			word.WriteString(q.String())
			quoted = append(quoted, q.String())
			inWord = true
			i = j + 1
		case c == ' ' || c == '\t' || c == '\r':
			flushWord()
			i++
		case c == '&' && inWord && strings.HasSuffix(word.String(), ">"),
			c == '&' && i+1 < len(s) && s[i+1] == '>':
			word.WriteByte(c) // 2>&1, &>file
			inWord = true
			i++
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			flushCmd()
			i += 2
		case strings.IndexByte(";&|()\n`", c) >= 0:
			flushCmd()
			i++
		default:
			word.WriteByte(c)
			inWord = true
			i++
		}
	}
	flushCmd()
	if depth < 4 {
		for _, q := range quoted {
			if strings.ContainsAny(q, " \t\n;&|") {
				cmds = append(cmds, split(q, makeRefs, depth+1)...)
			}
		}
	}
	return cmds
}
