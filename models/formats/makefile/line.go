package makefile

import (
	"bytes"
	"sort"
	"strings"
)

// Kind is what a logical line is to GNU make, read as a normal (non-recipe) line.
type Kind uint8

// The kinds of line Parse tells apart.
const (
	Blank     Kind = iota // empty, whitespace or a comment
	Recipe                // can only be a recipe line
	Assign                // variable assignment, define block, undefine
	Cond                  // ifeq, ifneq, ifdef, ifndef, else, endif
	Directive             // export, unexport, vpath, include, load (no assignment)
	Rule                  // targets: prerequisites [; recipe]
	RuleVar               // targets: VAR = value
	Other                 // anything else
)

// Line is one logical line of a Makefile (a define block is one line), with what
// Parse read from it. Which fields are set depends on Kind, as each field says.
type Line struct {
	Start, End int    // bytes of its physical lines, trailing newline included
	Raw        string // physical lines joined with "\n", CR before LF dropped
	Text       string // as a normal line: continuations collapsed, comment cut, trimmed
	Kind       Kind   // as a normal line (Recipe: only a recipe line)
	Owners     []int  // rule lines that may own it as a recipe line
	ManyOwners bool   // too many to list: any rule may own it
	Frame      int    // innermost enclosing conditional, -1 at top level
	Ctx        string // identity of the enclosing conditionals

	TargetText string // rule, rulevar: the text before the colon
	Prereqs    string // rule: prerequisites (static pattern: the prerequisite patterns)
	StaticPat  string // rule: static pattern target pattern
	Recipe     string // rule: recipe after ';'
	Name       string // assign, rulevar: the variable name as written
	Mods       []string
	Value      string
	Word       string // directive, conditional: its keyword

	cands *candSet // computed names, cached
}

type candSet struct {
	words []string
	known bool
}

// Frame is one conditional (ifeq … endif): the frame around it, and its
// directive lines (the if, each else, the endif) as indexes into File.Lines.
type Frame struct {
	Parent int
	Lines  []int
}

// File is a parsed Makefile: its logical lines in order and its conditionals. A
// File is read-only once Parse returns it.
type File struct {
	Lines  []Line
	Frames []Frame
	values map[string][]string // literal variable name -> values assigned
	ops    map[string][]string // literal variable name -> operators used
	sealed bool                // parsed: values are final, expansions may be cached
	cache  *expMemo
}

// Values returns every value the file assigns the variable name (written
// literally), in order; a define block's value is its body.
func (f *File) Values(name string) []string { return f.values[name] }

type ruleState struct {
	rules []int
	many  bool
	none  bool // no rule context is possible too
}

func (s ruleState) union(o ruleState) ruleState {
	out := ruleState{many: s.many || o.many, none: s.none || o.none}
	out.rules = append(append([]int{}, s.rules...), o.rules...)
	sort.Ints(out.rules)
	k := 0
	for i, r := range out.rules {
		if i == 0 || r != out.rules[k-1] {
			out.rules[k] = r
			k++
		}
	}
	out.rules = out.rules[:k]
	if len(out.rules) > 32 {
		out.rules, out.many = nil, true
	}
	return out
}

type physLine struct {
	Start, End int
	Text       string
}

func physicalLines(data []byte) []physLine {
	var out []physLine
	for start := 0; start < len(data); {
		end, text := len(data), data[start:]
		if nl := bytes.IndexByte(text, '\n'); nl >= 0 {
			end, text = start+nl+1, text[:nl]
			if len(text) > 0 && text[len(text)-1] == '\r' {
				text = text[:len(text)-1]
			}
		}
		t := string(text)
		if start == 0 {
			t = strings.TrimPrefix(t, "\xEF\xBB\xBF")
		}
		out = append(out, physLine{start, end, t})
		start = end
	}
	return out
}

func oddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// collapse joins continuation lines with single spaces, as make does for
// non-recipe lines.
func collapse(raw string) string {
	if !strings.Contains(raw, "\n") {
		return raw
	}
	parts := strings.Split(raw, "\n")
	var b strings.Builder
	for k, p := range parts {
		if k > 0 {
			p = strings.TrimLeft(p, " \t")
			b.WriteByte(' ')
		}
		if k < len(parts)-1 {
			p = strings.TrimRight(strings.TrimSuffix(p, "\\"), " \t")
		}
		b.WriteString(p)
	}
	return b.String()
}

// FindTopLevel returns the index of the first byte of stops in s outside make
// references and not escaped by an odd number of backslashes, or -1.
func FindTopLevel(s, stops string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '$' && i+1 < len(s) {
			if s[i+1] == '(' || s[i+1] == '{' {
				i = SkipRef(s, i) - 1
			} else {
				i++
			}
			continue
		}
		if strings.IndexByte(stops, c) < 0 {
			continue
		}
		n := 0
		for k := i - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	return -1
}

func removeComments(s string) string {
	if i := FindTopLevel(s, "#"); i >= 0 {
		return s[:i]
	}
	return s
}

// FirstWord splits s at its first blank: the word and the rest, blanks trimmed.
func FirstWord(s string) (string, string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// parseVarDefinition mirrors GNU make's parse_variable_definition.

// SkipRef returns the end of the make reference $( or ${ starting at s[i],
// counting nested parentheses (or braces) of the same kind as GNU make does.
func SkipRef(s string, i int) int {
	open := s[i+1]
	close := byte(')')
	if open == '{' {
		close = '}'
	}
	count := 0
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case open:
			count++
		case close:
			count--
			if count == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}
