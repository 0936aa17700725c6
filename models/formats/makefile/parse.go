package makefile

import (
	"bytes"
	"crypto/sha256"
	"strings"
)

func parseVarDefinition(s string) (name, op, value string, ok bool) {
	p := 0
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	nameStart, end := p, -1
	for {
		if p >= len(s) {
			return "", "", "", false
		}
		c := s[p]
		p++
		if c == '#' {
			return "", "", "", false
		}
		if c == ' ' || c == '\t' {
			if end >= 0 {
				return "", "", "", false
			}
			end = p - 1
			for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
				p++
			}
			continue
		}
		if c == '=' {
			if end < 0 {
				end = p - 1
			}
			op = "="
			break
		}
		if c == ':' {
			if end < 0 {
				end = p - 1
			}
			switch {
			case strings.HasPrefix(s[p:], "="):
				op, p = ":=", p+1
			case strings.HasPrefix(s[p:], ":="):
				op, p = "::=", p+2
			case strings.HasPrefix(s[p:], "::="):
				op, p = ":::=", p+3
			default:
				return "", "", "", false
			}
			break
		}
		if p < len(s) && s[p] == '=' && (c == '+' || c == '?' || c == '!') {
			if end < 0 {
				end = p - 1
			}
			op, p = string(c)+"=", p+1
			break
		}
		if end >= 0 {
			return "", "", "", false
		}
		if c == '$' && p < len(s) && (s[p] == '(' || s[p] == '{') {
			p = SkipRef(s, p-1)
		} else if c == '$' {
			p++
		}
	}
	return s[nameStart:end], op, strings.TrimLeft(s[p:], " \t"), true
}

type varAssign struct {
	Name, op, Value  string
	Mods             []string
	define, undefine bool
}

// parseVarAssignment mirrors GNU make's parse_var_assignment: modifiers, then a
// definition, define or undefine.
func parseVarAssignment(s string, targetVar bool) (varAssign, bool) {
	var va varAssign
	p := strings.TrimLeft(s, " \t")
	for p != "" {
		if name, op, value, ok := parseVarDefinition(p); ok {
			va.Name, va.op, va.Value = strings.TrimSpace(name), op, value
			return va, true
		}
		w, rest := FirstWord(p)
		switch w {
		case "export", "unexport", "override", "private":
			va.Mods = append(va.Mods, w)
		case "define", "undefine":
			if targetVar {
				return va, false
			}
			va.define, va.undefine = w == "define", w == "undefine"
			va.Name = strings.TrimSpace(rest)
			if name, op, _, ok := parseVarDefinition(rest); ok && va.define {
				va.Name, va.op = strings.TrimSpace(name), op
			}
			return va, va.Name != ""
		default:
			return va, false
		}
		p = rest
	}
	return va, false
}

var condWords = map[string]bool{"ifeq": true, "ifneq": true, "ifdef": true, "ifndef": true, "else": true, "endif": true}

var directiveWords = map[string]bool{
	"export": true, "unexport": true, "vpath": true, "include": true, "-include": true,
	"sinclude": true, "load": true, "-load": true,
}

func ctxHash(parent, text string) string {
	h := sha256.Sum256([]byte(parent + "\x00" + text))
	return string(h[:])
}

// Parse reads a Makefile as GNU make reads it, line by line (see the package
// comment); ok is false for input GNU make would not read the same way twice (NUL
// bytes, a computed .RECIPEPREFIX, conditionals nested over 1000 deep).
func Parse(data []byte) (*File, bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, false
	}
	p := &parser{phys: physicalLines(data), state: ruleState{none: true}, top: -1}
	p.f = &File{values: map[string][]string{}, ops: map[string][]string{}, Lines: make([]Line, 0, len(p.phys))}
	p.prefix['\t'] = true
	for p.i < len(p.phys) {
		if !p.line() {
			return nil, false
		}
	}
	p.f.sealed = true
	return p.f, true
}

// parser is Parse's state between logical lines.
type parser struct {
	f      *File
	phys   []physLine
	i      int       // the next physical line
	prefix [256]bool // the recipe prefixes that may be in force
	state  ruleState // the rule context: which rules a recipe line may belong to
	top    int       // the innermost open conditional, -1 at top level
	ctxs   []string  // ctx of each open conditional level
}

// logical joins physical lines i… at odd trailing backslashes, returning the last
// one's index and the text.
func (p *parser) logical(i int) (int, string) {
	j := i
	for j < len(p.phys)-1 && oddBackslashes(p.phys[j].Text) {
		j++
	}
	parts := make([]string, 0, j-i+1)
	for k := i; k <= j; k++ {
		parts = append(parts, p.phys[k].Text)
	}
	return j, strings.Join(parts, "\n")
}

// line reads the next logical line into f.Lines; false when the file cannot be
// read the same way twice.
func (p *parser) line() bool {
	j, raw := p.logical(p.i)
	idx := len(p.f.Lines)
	L := Line{Start: p.phys[p.i].Start, End: p.phys[j].End, Raw: raw, Frame: p.top}
	if len(p.ctxs) > 0 {
		L.Ctx = p.ctxs[len(p.ctxs)-1]
	}
	p.i = j + 1
	depth := len(p.ctxs)
	dual := false
	if raw != "" && p.prefix[raw[0]] && (len(p.state.rules) > 0 || p.state.many) {
		L.Owners = append([]int{}, p.state.rules...)
		L.ManyOwners = p.state.many
		if !p.state.none {
			L.Kind = Recipe
			p.f.Lines = append(p.f.Lines, L)
			return true
		}
		dual = true // a recipe line if a rule is open, else a normal line
	}
	L.Text = strings.TrimLeft(removeComments(collapse(raw)), " \t\f\v\r")
	effect, ok := p.classify(&L, idx, depth, dual)
	if !ok {
		return false
	}
	if L.Kind != Cond && L.Kind != Blank {
		if depth > 0 || dual {
			p.state = p.state.union(effect)
		} else {
			p.state = effect
		}
	}
	p.f.Lines = append(p.f.Lines, L)
	return true
}

// classify sets L's kind and parts and returns what the line does to the rule
// context when it counts.
func (p *parser) classify(L *Line, idx, depth int, dual bool) (ruleState, bool) {
	ender := ruleState{none: true}
	if L.Text == "" {
		L.Kind = Blank
		return p.state, true
	}
	va, isAssign := parseVarAssignment(L.Text, false)
	w, rest := FirstWord(L.Text)
	switch {
	case isAssign:
		return ender, p.assign(L, va, depth, dual)
	case condWords[w]:
		L.Kind, L.Word = Cond, w
		return p.state, p.cond(L, idx, w)
	case directiveWords[w]:
		L.Kind, L.Word, L.Value = Directive, w, rest
		return ender, true
	}
	return parseRuleLine(L, idx, ender), true
}

// assign records an assignment (reading a define block's body) and follows
// .RECIPEPREFIX.
func (p *parser) assign(L *Line, va varAssign, depth int, dual bool) bool {
	L.Kind, L.Name, L.Mods, L.Value = Assign, va.Name, va.Mods, va.Value
	if va.define {
		p.defineBody(L)
	}
	if !strings.Contains(va.Name, "$") {
		p.f.values[va.Name] = append(p.f.values[va.Name], L.Value)
		p.f.ops[va.Name] = append(p.f.ops[va.Name], va.op)
	}
	// A name that cannot be worked out is taken not to be .RECIPEPREFIX: a caller
	// that must trust the prefix protects such an assignment.
	sets := va.Name == ".RECIPEPREFIX"
	if strings.Contains(va.Name, "$") {
		ws, _ := p.f.Words(va.Name) // the values assigned so far
		for _, w := range ws {
			sets = sets || w == ".RECIPEPREFIX"
		}
	}
	if !sets {
		return true
	}
	if strings.Contains(L.Value, "$") || va.define || va.undefine {
		return false
	}
	c := byte('\t')
	if L.Value != "" {
		c = L.Value[0]
	}
	if depth == 0 && !dual {
		p.prefix = [256]bool{}
	}
	p.prefix[c] = true
	return true
}

// defineBody reads a define block up to its endef (nested defines counted) into
// L: its raw text, its end and, as its value, the body.
func (p *parser) defineBody(L *Line) {
	level := 1
	var body []string
	for level > 0 && p.i < len(p.phys) {
		j, line := p.logical(p.i)
		p.i = j + 1
		L.End = p.phys[j].End
		L.Raw += "\n" + line
		if line == "" || !p.prefix[line[0]] {
			dw, _ := FirstWord(strings.TrimLeft(collapse(line), " \t"))
			if dw == "define" {
				level++
			} else if dw == "endef" {
				level--
			}
		}
		if level > 0 {
			body = append(body, line)
		}
	}
	L.Value = strings.Join(body, "\n")
}

// cond opens, continues or closes a conditional frame.
func (p *parser) cond(L *Line, idx int, w string) bool {
	switch w {
	case "else":
		if p.top >= 0 {
			p.f.Frames[p.top].Lines = append(p.f.Frames[p.top].Lines, idx)
			p.ctxs[len(p.ctxs)-1] = ctxHash(p.ctxs[len(p.ctxs)-1], L.Text)
		}
	case "endif":
		if p.top >= 0 {
			p.f.Frames[p.top].Lines = append(p.f.Frames[p.top].Lines, idx)
			p.top = p.f.Frames[p.top].Parent
			p.ctxs = p.ctxs[:len(p.ctxs)-1]
		}
	default:
		if len(p.ctxs) >= 1000 {
			return false
		}
		parent := ""
		if len(p.ctxs) > 0 {
			parent = p.ctxs[len(p.ctxs)-1]
		}
		p.f.Frames = append(p.f.Frames, Frame{Parent: p.top, Lines: []int{idx}})
		p.top = len(p.f.Frames) - 1
		p.ctxs = append(p.ctxs, ctxHash(parent, L.Text))
	}
	return true
}

// parseRuleLine classifies L (not an assignment, conditional or directive) as a
// rule, target-specific variable or other line, and returns its effect on the
// rule context.
func parseRuleLine(L *Line, idx int, ender ruleState) ruleState {
	line := strings.TrimLeft(collapse(L.Raw), " \t\f\v\r")
	head := line
	if k := FindTopLevel(line, ";#"); k >= 0 {
		head = line[:k]
		if line[k] == ';' {
			L.Recipe = line[k+1:]
		}
	}
	colon := FindTopLevel(head, ":")
	if colon < 0 {
		L.Kind = Other
		if strings.Contains(L.Text, "$") {
			return ruleState{rules: []int{idx}, none: true} // may expand to a rule
		}
		return ender
	}
	targets := head[:colon]
	targets = strings.TrimSuffix(targets, "&")
	rest := head[colon+1:]
	if strings.HasPrefix(rest, ":") {
		rest = rest[1:]
	}
	L.TargetText = targets
	if va, ok := parseVarAssignment(rest, true); ok {
		L.Kind, L.Name, L.Mods, L.Value = RuleVar, va.Name, va.Mods, va.Value
		if L.Recipe != "" {
			L.Value += ";" + L.Recipe
			L.Recipe = ""
		}
		return ender
	}
	L.Kind = Rule
	if k := FindTopLevel(rest, ":"); k >= 0 {
		L.StaticPat, L.Prereqs = strings.TrimSpace(rest[:k]), rest[k+1:]
	} else {
		L.Prereqs = rest
	}
	if len(Fields(targets)) == 0 {
		return ender // a rule without targets: make ignores its recipe
	}
	return ruleState{rules: []int{idx}}
}

// Fields splits s at blanks outside make references.
func Fields(s string) []string {
	var out []string
	start := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		if c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{') {
			i = SkipRef(s, i) - 1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}
