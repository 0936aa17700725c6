package fileparts

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"regexp"
	"sort"
	"strings"
)

// Makefile parts (Makefile#targets).
//
// The file is read as GNU make reads it, line by line: logical lines joined at an
// odd number of trailing backslashes, CR before LF dropped, comments cut at an
// unescaped '#' outside $(...); a line starting with the recipe prefix (TAB, or
// what .RECIPEPREFIX sets) is a recipe line when a rule context is open; variable
// assignments (with export/override/private/define/undefine), conditionals,
// export/unexport/vpath/include/load directives, rules (':', '::', '&:', static
// patterns, target-specific variables after the colon) and anything else.
//
// Conditionals are not evaluated: any branch may be the live one. A line inside a
// conditional may be skipped, and a skipped line does not end the rule context
// (GNU make ignores everything in a false branch), so after one the recipe lines
// that follow may belong to the rule before it as well as to what the line starts.
// A recipe line is attributed to every rule that may own it.
//
// What is protected, computed from the base file:
//   - the targets named (DefaultGoal resolved to the base's default goal),
//     transitively their prerequisites (variables in prerequisite lists expanded
//     with every value the base assigns them; static pattern stems substituted) and
//     the targets their recipes run with $(MAKE)/make;
//   - every variable a protected line references ($(X), ${X}, $X, the name in
//     $(call X,...), $(value X), $(origin X), $(flavor X)), transitively, and the
//     variables make treats specially (SHELL, .SHELLFLAGS, .RECIPEPREFIX,
//     .DEFAULT_GOAL, MAKEFLAGS, MAKE, VPATH, ...) and exported ones, and the
//     environment variables a judge's environment is likely to have (PATH, HOME,
//     GOFLAGS, PYTHONPATH, PYTEST_*, NODE_OPTIONS, LD_*, ...: see envVars),
//     since make passes those to recipes with the Makefile's value;
//   - conservatively everything of a kind when the base makes it unknowable: all
//     variables for a computed reference ($($(X)_FLAGS)), a bare `export` or
//     .EXPORT_ALL_VARIABLES; all rules for prerequisites computed by functions
//     ($(patsubst ...)), .SECONDEXPANSION or a computed default goal.
//
// A line of base, worker or judged file is protected when it is:
//   - a rule or target-specific variable naming a protected target, literally or
//     through the values the file assigns the variables in its target list
//     (`$(BIN): ...` with BIN = test), or a pattern matching one (`%: ; @true`,
//     `%: GOTEST = true`), or a target list that cannot be worked out;
//   - a recipe line of such a rule (orphaned by a conditional or not);
//   - an assignment (=, :=, ::=, :::=, +=, ?=, !=, define, undefine) of a
//     protected variable, or exported (export X = ...), or containing $(eval ...)
//     or $(guile ...), or to a computed name that may be protected;
//   - an export, unexport, vpath, include, -include, sinclude, load directive;
//   - a special target: .PHONY/.PRECIOUS/.SECONDARY/.INTERMEDIATE/
//     .NOTINTERMEDIATE/.SILENT/.IGNORE when it names a protected target or nothing,
//     every other (.ONESHELL, .POSIX, .DEFAULT, .SUFFIXES, .EXPORT_ALL_VARIABLES,
//     .SECONDEXPANSION, .NOTPARALLEL, .DELETE_ON_ERROR, ...) always;
//   - any other line calling $(eval)/$(guile) or expanding to something that may
//     name a protected target (`$(RULE)` with RULE = test: ; @true).
//
// A protected unit is a rule with its recipe lines (blank and comment lines inside
// it do not count), or one other protected line; its context is the stack of
// conditionals around it (their directive lines, every branch so far), so a worker
// who wraps a protected line in `ifeq (0,1)` changes its context and gets the base
// file back. Conditional lines that call $(eval) must be the base's, and with
// DefaultGoal the judged file's default goal must be the base's.
//
// Known gaps: included makefiles (the include lines are protected, what they
// contain is not read: protect those files whole), implicit and suffix rules that
// build a protected target's prerequisite *files* (a pattern matching a protected
// target is caught), builtin variables only implicit rules use, recursive make
// into other directories or makefiles (-C, -f), $(shell ...) and != run at parse
// time in unprotected lines (they run worker code, like the worker's code under
// test does anyway), environment variables of the judge's environment that are
// not in envVars (make passes them to recipes with the Makefile's value: run the
// judged make with a minimal environment, or `make -e`), and a file named like a protected target that is not .PHONY at
// base (make then thinks it is up to date; a GNUmakefile or makefile beside the
// Makefile, which make reads first, is likewise the caller's to protect).

type mkKind uint8

const (
	mkBlank     mkKind = iota // empty, whitespace or a comment
	mkRecipe                  // can only be a recipe line
	mkAssign                  // variable assignment, define block, undefine
	mkCond                    // ifeq, ifneq, ifdef, ifndef, else, endif
	mkDirective               // export, unexport, vpath, include, load (no assignment)
	mkRule                    // targets: prerequisites [; recipe]
	mkRuleVar                 // targets: VAR = value
	mkOther                   // anything else
)

type mkLine struct {
	start, end int    // bytes of its physical lines, trailing newline included
	raw        string // physical lines joined with "\n", CR before LF dropped
	text       string // as a normal line: continuations collapsed, comment cut, trimmed
	kind       mkKind // as a normal line (mkRecipe: only a recipe line)
	owners     []int  // rule lines that may own it as a recipe line
	manyOwners bool   // too many to list: any rule may own it
	frame      int    // innermost enclosing conditional, -1 at top level
	ctx        string // identity of the enclosing conditionals

	targetText string // rule, rulevar: the text before the colon
	prereqs    string // rule: prerequisites (static pattern: the prerequisite patterns)
	staticPat  string // rule: static pattern target pattern
	recipe     string // rule: recipe after ';'
	name       string // assign, rulevar: the variable name as written
	mods       []string
	value      string
	word       string // directive, conditional: its keyword

	cands *mkCands // computed names, cached
}

type mkCands struct {
	words []string
	known bool
}

type mkFrame struct {
	parent int
	lines  []int
}

type mkFile struct {
	lines  []mkLine
	frames []mkFrame
	values map[string][]string // literal variable name -> values assigned
	ops    map[string][]string // literal variable name -> operators used
	sealed bool                // parsed: values are final, expansions may be cached
	cache  *mkMemo
}

type mkState struct {
	rules []int
	many  bool
	none  bool // no rule context is possible too
}

func (s mkState) union(o mkState) mkState {
	out := mkState{many: s.many || o.many, none: s.none || o.none}
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
	start, end int
	text       string
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

// findTopLevel returns the index of the first byte of stops in s outside make
// references and not escaped by an odd number of backslashes, or -1.
func findTopLevel(s, stops string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '$' && i+1 < len(s) {
			if s[i+1] == '(' || s[i+1] == '{' {
				i = skipMakeRef(s, i) - 1
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
	if i := findTopLevel(s, "#"); i >= 0 {
		return s[:i]
	}
	return s
}

func firstWord(s string) (string, string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// parseVarDefinition mirrors GNU make's parse_variable_definition.
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
			p = skipMakeRef(s, p-1)
		} else if c == '$' {
			p++
		}
	}
	return s[nameStart:end], op, strings.TrimLeft(s[p:], " \t"), true
}

type varAssign struct {
	name, op, value  string
	mods             []string
	define, undefine bool
}

// parseVarAssignment mirrors GNU make's parse_var_assignment: modifiers, then a
// definition, define or undefine.
func parseVarAssignment(s string, targetVar bool) (varAssign, bool) {
	var va varAssign
	p := strings.TrimLeft(s, " \t")
	for p != "" {
		if name, op, value, ok := parseVarDefinition(p); ok {
			va.name, va.op, va.value = strings.TrimSpace(name), op, value
			return va, true
		}
		w, rest := firstWord(p)
		switch w {
		case "export", "unexport", "override", "private":
			va.mods = append(va.mods, w)
		case "define", "undefine":
			if targetVar {
				return va, false
			}
			va.define, va.undefine = w == "define", w == "undefine"
			va.name = strings.TrimSpace(rest)
			if name, op, _, ok := parseVarDefinition(rest); ok && va.define {
				va.name, va.op = strings.TrimSpace(name), op
			}
			return va, va.name != ""
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

// parseMake reads a Makefile; ok is false for input GNU make would not read the
// same way twice (NUL bytes, a computed .RECIPEPREFIX, conditionals nested over
// 1000 deep).
func parseMake(data []byte) (*mkFile, bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, false
	}
	phys := physicalLines(data)
	f := &mkFile{values: map[string][]string{}, ops: map[string][]string{}, lines: make([]mkLine, 0, len(phys))}
	var prefix [256]bool
	prefix['\t'] = true
	state := mkState{none: true}
	top := -1
	var ctxs []string // ctx of each open conditional level
	logical := func(i int) (int, string) {
		j := i
		for j < len(phys)-1 && oddBackslashes(phys[j].text) {
			j++
		}
		parts := make([]string, 0, j-i+1)
		for k := i; k <= j; k++ {
			parts = append(parts, phys[k].text)
		}
		return j, strings.Join(parts, "\n")
	}
	for i := 0; i < len(phys); {
		j, raw := logical(i)
		idx := len(f.lines)
		L := mkLine{start: phys[i].start, end: phys[j].end, raw: raw, frame: top}
		if len(ctxs) > 0 {
			L.ctx = ctxs[len(ctxs)-1]
		}
		i = j + 1
		depth := len(ctxs)
		dual := false
		if raw != "" && prefix[raw[0]] && (len(state.rules) > 0 || state.many) {
			L.owners = append([]int{}, state.rules...)
			L.manyOwners = state.many
			if !state.none {
				L.kind = mkRecipe
				f.lines = append(f.lines, L)
				continue
			}
			dual = true
		}
		L.text = strings.TrimLeft(removeComments(collapse(raw)), " \t\f\v\r")
		effect := state // what the line does to the rule context when it counts
		ender := mkState{none: true}
		switch {
		case L.text == "":
			L.kind = mkBlank
		default:
			va, isAssign := parseVarAssignment(L.text, false)
			w, rest := firstWord(L.text)
			switch {
			case isAssign:
				L.kind, L.name, L.mods, L.value = mkAssign, va.name, va.mods, va.value
				if va.define {
					level := 1
					var body []string
					for level > 0 && i < len(phys) {
						j, line := logical(i)
						i = j + 1
						L.end = phys[j].end
						L.raw += "\n" + line
						if line == "" || !prefix[line[0]] {
							dw, _ := firstWord(strings.TrimLeft(collapse(line), " \t"))
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
					L.value = strings.Join(body, "\n")
				}
				if !strings.Contains(va.name, "$") {
					f.values[va.name] = append(f.values[va.name], L.value)
					f.ops[va.name] = append(f.ops[va.name], va.op)
				}
				// A name that cannot be worked out is taken not to be
				// .RECIPEPREFIX: such an assignment is a protected unit, so only
				// the base's can reach a judged file.
				sets := va.name == ".RECIPEPREFIX"
				if strings.Contains(va.name, "$") {
					ws, _ := f.wordsOf(va.name, 0) // the values assigned so far
					for _, w := range ws {
						sets = sets || w == ".RECIPEPREFIX"
					}
				}
				if sets {
					if strings.Contains(L.value, "$") || va.define || va.undefine {
						return nil, false
					}
					c := byte('\t')
					if L.value != "" {
						c = L.value[0]
					}
					if depth == 0 && !dual {
						prefix = [256]bool{}
					}
					prefix[c] = true
				}
				effect = ender
			case condWords[w]:
				L.kind, L.word = mkCond, w
				switch w {
				case "else":
					if top >= 0 {
						f.frames[top].lines = append(f.frames[top].lines, idx)
						ctxs[len(ctxs)-1] = ctxHash(ctxs[len(ctxs)-1], L.text)
					}
				case "endif":
					if top >= 0 {
						f.frames[top].lines = append(f.frames[top].lines, idx)
						top = f.frames[top].parent
						ctxs = ctxs[:len(ctxs)-1]
					}
				default:
					if len(ctxs) >= 1000 {
						return nil, false
					}
					parent := ""
					if len(ctxs) > 0 {
						parent = ctxs[len(ctxs)-1]
					}
					f.frames = append(f.frames, mkFrame{parent: top, lines: []int{idx}})
					top = len(f.frames) - 1
					ctxs = append(ctxs, ctxHash(parent, L.text))
				}
			case directiveWords[w]:
				L.kind, L.word, L.value = mkDirective, w, rest
				effect = ender
			default:
				effect = parseRuleLine(&L, idx, ender)
			}
		}
		if L.kind != mkCond && L.kind != mkBlank {
			if depth > 0 || dual {
				state = state.union(effect)
			} else {
				state = effect
			}
		}
		f.lines = append(f.lines, L)
	}
	f.sealed = true
	return f, true
}

// parseRuleLine classifies L (not an assignment, conditional or directive) as a
// rule, target-specific variable or other line, and returns its effect on the
// rule context.
func parseRuleLine(L *mkLine, idx int, ender mkState) mkState {
	line := strings.TrimLeft(collapse(L.raw), " \t\f\v\r")
	head := line
	if k := findTopLevel(line, ";#"); k >= 0 {
		head = line[:k]
		if line[k] == ';' {
			L.recipe = line[k+1:]
		}
	}
	colon := findTopLevel(head, ":")
	if colon < 0 {
		L.kind = mkOther
		if strings.Contains(L.text, "$") {
			return mkState{rules: []int{idx}, none: true} // may expand to a rule
		}
		return ender
	}
	targets := head[:colon]
	targets = strings.TrimSuffix(targets, "&")
	rest := head[colon+1:]
	if strings.HasPrefix(rest, ":") {
		rest = rest[1:]
	}
	L.targetText = targets
	if va, ok := parseVarAssignment(rest, true); ok {
		L.kind, L.name, L.mods, L.value = mkRuleVar, va.name, va.mods, va.value
		if L.recipe != "" {
			L.value += ";" + L.recipe
			L.recipe = ""
		}
		return ender
	}
	L.kind = mkRule
	if k := findTopLevel(rest, ":"); k >= 0 {
		L.staticPat, L.prereqs = strings.TrimSpace(rest[:k]), rest[k+1:]
	} else {
		L.prereqs = rest
	}
	if len(makeFields(targets)) == 0 {
		return ender // a rule without targets: make ignores its recipe
	}
	return mkState{rules: []int{idx}}
}

// makeFields splits s at blanks outside make references.
func makeFields(s string) []string {
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
			i = skipMakeRef(s, i) - 1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// simpleRef returns the variable name w refers to when w is exactly one reference
// to a literal name ($(X), ${X}, $X).
func simpleRef(w string) (string, bool) {
	if len(w) == 2 && w[0] == '$' && w[1] != '$' && w[1] != '(' && w[1] != '{' {
		return w[1:], true
	}
	if len(w) > 3 && w[0] == '$' && (w[1] == '(' || w[1] == '{') && skipMakeRef(w, 0) == len(w) {
		inner := w[2 : len(w)-1]
		if inner != "" && !strings.ContainsAny(inner, " \t,:$=%()") {
			return inner, true
		}
	}
	return "", false
}

const maxAlternatives = 256

// mkMemo caches what each variable may expand to; entries being computed are
// busy, so a variable that refers to itself is unknown rather than endless.
type mkMemo struct {
	words map[string]*mkCands
	alts  map[string]*mkCands
}

// expansions are computed per variable once, so a hostile file's fan-out
// (X = $(Y) a thousand times, Y = $(Z) a thousand times, ...) costs linear time.
func (f *mkFile) memo() *mkMemo {
	if f.cache == nil || !f.sealed {
		f.cache = &mkMemo{words: map[string]*mkCands{}, alts: map[string]*mkCands{}}
	}
	return f.cache
}

// wordsOf returns every word text may expand to, over-approximated with every
// value the file assigns each variable, or known=false when text calls a function,
// uses a computed name, or refers to a variable that refers to itself.
func (f *mkFile) wordsOf(text string, _ int) ([]string, bool) {
	return f.wordsIn(text, f.memo())
}

func (f *mkFile) wordsIn(text string, m *mkMemo) ([]string, bool) {
	var out []string
	for _, w := range makeFields(text) {
		if !strings.Contains(w, "$") {
			out = append(out, w)
			continue
		}
		if name, ok := simpleRef(w); ok {
			ws, ok := f.varWords(name, m)
			if !ok {
				return nil, false
			}
			out = append(out, ws...)
		} else {
			alts, ok := f.altsIn(w, m)
			if !ok {
				return nil, false
			}
			for _, a := range alts {
				out = append(out, strings.Fields(a)...)
			}
		}
		if len(out) > 4*maxAlternatives {
			return nil, false
		}
	}
	return out, true
}

func (f *mkFile) varWords(name string, m *mkMemo) ([]string, bool) {
	if c, ok := m.words[name]; ok {
		if c == nil {
			return nil, false // busy: refers to itself
		}
		return c.words, c.known
	}
	m.words[name] = nil
	var out []string
	known := true
	for k, v := range f.values[name] {
		if f.ops[name][k] == "!=" {
			known = false
			break
		}
		ws, ok := f.wordsIn(v, m)
		if !ok || len(out)+len(ws) > 4*maxAlternatives {
			known = false
			break
		}
		out = append(out, ws...)
	}
	if !known {
		out = nil
	}
	m.words[name] = &mkCands{out, known}
	return out, known
}

// alternatives returns the texts w may expand to, each variable taking one of its
// values whole; unknown when a variable is appended to (+=) or run (!=).
func (f *mkFile) alternatives(w string, _ int) ([]string, bool) {
	return f.altsIn(w, f.memo())
}

func (f *mkFile) altsIn(w string, m *mkMemo) ([]string, bool) {
	results := []string{""}
	for i := 0; i < len(w); {
		if w[i] != '$' || i+1 >= len(w) {
			for k := range results {
				results[k] += w[i : i+1]
			}
			i++
			continue
		}
		if w[i+1] == '$' {
			for k := range results {
				results[k] += "$"
			}
			i += 2
			continue
		}
		end := i + 2
		if w[i+1] == '(' || w[i+1] == '{' {
			end = skipMakeRef(w, i)
		}
		name, ok := simpleRef(w[i:end])
		if !ok {
			return nil, false
		}
		alts, ok := f.varAlts(name, m)
		if !ok {
			return nil, false
		}
		if len(alts) == 0 {
			alts = []string{""}
		}
		if len(results)*len(alts) > maxAlternatives {
			return nil, false
		}
		var next []string
		for _, r := range results {
			for _, a := range alts {
				next = append(next, r+a)
			}
		}
		results = next
		i = end
	}
	return results, true
}

func (f *mkFile) varAlts(name string, m *mkMemo) ([]string, bool) {
	if c, ok := m.alts[name]; ok {
		if c == nil {
			return nil, false
		}
		return c.words, c.known
	}
	m.alts[name] = nil
	var out []string
	known := true
	for k, v := range f.values[name] {
		if op := f.ops[name][k]; op == "+=" || op == "!=" {
			known = false
			break
		}
		va, ok := f.altsIn(v, m)
		if !ok || len(out)+len(va) > maxAlternatives {
			known = false
			break
		}
		out = append(out, va...)
	}
	if !known {
		out = nil
	}
	m.alts[name] = &mkCands{out, known}
	return out, known
}

// splitNames splits words further at the characters that would end a target
// name once expanded into a rule line.
func splitNames(words []string) []string {
	var out []string
	for _, w := range words {
		for _, p := range strings.FieldsFunc(w, func(r rune) bool { return strings.ContainsRune(":;|&=", r) }) {
			out = append(out, p)
		}
	}
	return out
}

// candidates returns, cached, the names line i defines: targets of a rule or
// target-specific variable, the variable of an assignment, what an other line may
// expand to.
func (f *mkFile) candidates(i int) ([]string, bool) {
	L := &f.lines[i]
	if L.cands != nil {
		return L.cands.words, L.cands.known
	}
	var words []string
	known := true
	switch L.kind {
	case mkRule, mkRuleVar:
		if strings.Contains(L.targetText, "$") {
			ws, ok := f.wordsOf(L.targetText, 0)
			words, known = splitNames(ws), ok
		} else {
			words = makeFields(L.targetText)
		}
	case mkAssign:
		if strings.Contains(L.name, "$") {
			words, known = f.wordsOf(L.name, 0)
		} else {
			words = []string{L.name}
		}
	case mkOther:
		if strings.Contains(L.text, "$") {
			ws, ok := f.wordsOf(L.text, 0)
			words, known = splitNames(ws), ok
		}
	}
	L.cands = &mkCands{words, known}
	return words, known
}

var evalCall = regexp.MustCompile(`\$[({](eval|guile)(\s|[)}]|$)`)

// specialVars are variables make gives a meaning of its own.
var specialVars = []string{
	"SHELL", ".SHELLFLAGS", ".RECIPEPREFIX", ".DEFAULT_GOAL", "MAKEFLAGS", "MFLAGS",
	"GNUMAKEFLAGS", "MAKEOVERRIDES", "MAKEFILES", "MAKE", "MAKE_COMMAND", "MAKECMDGOALS",
	"MAKELEVEL", "MAKESHELL", "VPATH", "GPATH", ".EXTRA_PREREQS", ".LIBPATTERNS",
	".INCLUDE_DIRS", "SUFFIXES", "MAKE_RESTARTS", "MAKE_TERMOUT", "MAKE_TERMERR",
}

// envVars are environment variables a judge's environment is likely to have:
// make hands an environment variable to recipes with the Makefile's value even
// without export (PATH := fake:$(PATH) swaps the tools a protected recipe runs), so
// assignments to these are protected too. envPrefixes extend the list.
var envVars = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TMPDIR": true, "TMP": true,
	"TEMP": true, "PWD": true, "OLDPWD": true, "LANG": true, "LANGUAGE": true, "TERM": true,
	"TZ": true, "CI": true, "ENV": true, "BASH_ENV": true, "IFS": true, "CDPATH": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "EDITOR": true, "PAGER": true,
	"CC": true, "CXX": true, "CFLAGS": true, "CPPFLAGS": true, "CXXFLAGS": true, "LDFLAGS": true,
	"GOFLAGS": true, "GOPATH": true, "GOROOT": true, "GOCACHE": true, "GOMODCACHE": true,
	"GOENV": true, "GOTOOLCHAIN": true, "GOPROXY": true, "GOPRIVATE": true, "GONOPROXY": true,
	"GONOSUMDB": true, "GONOSUMCHECK": true, "GOSUMDB": true, "GOINSECURE": true, "GOWORK": true,
	"GOEXPERIMENT": true, "GODEBUG": true, "GOOS": true, "GOARCH": true, "GO111MODULE": true,
	"GOBIN": true, "GOGC": true, "GOMAXPROCS": true, "GOTMPDIR": true, "GOVCS": true,
	"GOAMD64": true, "GOTELEMETRY": true, "GOCOVERDIR": true, "GOTRACEBACK": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "PYTHONSAFEPATH": true,
	"PYTHONUSERBASE": true, "PYTHONNOUSERSITE": true, "PYTHONWARNINGS": true,
	"PYTHONDONTWRITEBYTECODE": true, "PYTHONINSPECT": true, "PYTHONBREAKPOINT": true,
	"VIRTUAL_ENV": true, "CONDA_PREFIX": true, "NODE_OPTIONS": true, "NODE_PATH": true,
	"NODE_ENV": true, "RUSTFLAGS": true, "RUSTDOCFLAGS": true, "RUSTC": true,
	"RUSTC_WRAPPER": true, "RUSTUP_TOOLCHAIN": true, "JAVA_HOME": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "MAVEN_OPTS": true, "GRADLE_OPTS": true,
}

var envPrefixes = []string{
	"XDG_", "LC_", "LD_", "DYLD_", "CGO_", "PYTEST_", "PIP_", "UV_", "POETRY_", "TOX_",
	"NPM_CONFIG_", "npm_config_", "YARN_", "PNPM_", "COREPACK_", "CARGO_", "GIT_", "SSL_",
}

func isEnvVar(name string) bool {
	if envVars[name] {
		return true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// perTargetSpecial are special targets that only affect the targets they name.
var perTargetSpecial = map[string]bool{
	".PHONY": true, ".PRECIOUS": true, ".INTERMEDIATE": true, ".NOTINTERMEDIATE": true,
	".SECONDARY": true, ".SILENT": true, ".IGNORE": true,
}

var specialTargetRe = regexp.MustCompile(`^\.[A-Z_]+$`)

func isSpecialTarget(t string) bool { return specialTargetRe.MatchString(t) }

// stem is the part of name that '%' in pattern matches (patternMatch holds).
func stem(pattern, name string) string {
	k := strings.IndexByte(pattern, '%')
	if k < 0 || !patternMatch(pattern, name) {
		return ""
	}
	return name[k : len(name)-(len(pattern)-k-1)]
}

func patternMatch(pattern, name string) bool {
	i := strings.IndexByte(pattern, '%')
	if i < 0 {
		return pattern == name
	}
	pre, suf := pattern[:i], pattern[i+1:]
	return len(name) >= len(pre)+len(suf) && strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf)
}

// mkSpec is the protected part of one Makefile, computed from the base.
type mkSpec struct {
	active     bool
	targets    map[string]bool
	vars       map[string]bool
	allTargets bool
	allVars    bool
	wantGoal   bool
	goals      []string // the base's default goal candidates
}

func newMakeSpec(base []byte, names []string) (*mkSpec, error) {
	s := &mkSpec{targets: map[string]bool{}, vars: map[string]bool{}, active: len(names) > 0}
	for _, v := range specialVars {
		s.vars[v] = true
	}
	var bf *mkFile
	if base != nil {
		var ok bool
		if bf, ok = parseMake(base); !ok {
			return nil, errors.New("fileparts: the base Makefile cannot be read (NUL bytes, a computed .RECIPEPREFIX or conditionals nested too deep)")
		}
	}
	for _, n := range names {
		if n != DefaultGoal {
			s.addTarget(n)
			continue
		}
		s.wantGoal = true
		if bf != nil {
			goals, known := bf.defaultGoals()
			s.goals = goals
			if !known {
				s.allTargets = true
			}
			for _, g := range goals {
				s.addTarget(g)
			}
		}
	}
	if bf != nil && s.active {
		if len(bf.evalConds()) > 0 {
			s.allTargets = true // rules may be defined at parse time
		}
		s.close(bf)
	}
	return s, nil
}

func (s *mkSpec) addTarget(t string) {
	if t != "" && t != "|" && t != ".WAIT" && !strings.Contains(t, "%") {
		s.targets[t] = true
	}
}

// close grows the protected targets and variables until every protected line of
// the base has contributed what it references.
func (s *mkSpec) close(f *mkFile) {
	done := make([]bool, len(f.lines))
	frameDone := make([]bool, len(f.frames))
	for pass := 0; ; pass++ {
		progress := false
		for i := range f.lines {
			if done[i] {
				continue
			}
			if _, prot := s.lineNames(f, i); !prot {
				continue
			}
			done[i], progress = true, true
			s.absorb(f, i, frameDone)
		}
		if !progress {
			return
		}
		if pass > 64 {
			s.allTargets, s.allVars = true, true
		}
	}
}

// absorb adds what protected line i of the base references.
func (s *mkSpec) absorb(f *mkFile, i int, frameDone []bool) {
	L := &f.lines[i]
	if L.kind != mkRecipe && L.kind != mkBlank && evalCall.MatchString(L.raw) {
		// $(eval) at parse time may define rules whose names cannot be known.
		s.allTargets = true
	}
	addVar := func(v string) { s.vars[v] = true }
	computed := func() { s.allVars = true }
	makeRefs(L.raw, addVar, computed, 0)
	for fr := L.frame; fr >= 0 && !frameDone[fr]; fr = f.frames[fr].parent {
		frameDone[fr] = true
		for _, c := range f.frames[fr].lines {
			makeRefs(f.lines[c].raw, addVar, computed, 0)
		}
	}
	addTargets := func(text string) {
		if !strings.Contains(text, "$") {
			for _, w := range makeFields(text) {
				s.addTarget(w)
			}
			return
		}
		ws, ok := f.wordsOf(text, 0)
		if !ok {
			s.allTargets = true
		}
		for _, w := range ws {
			s.addTarget(w)
		}
	}
	runs := func(text string) {
		for _, words := range shellCommands(text, true, 0) {
			makeTargetsIn(words, func(t string) {
				if t == DefaultGoal {
					for _, g := range s.goals {
						s.addTarget(g)
					}
					return
				}
				addTargets(t)
			})
		}
	}
	if len(L.owners) > 0 || L.manyOwners || L.kind == mkRecipe {
		if L.raw != "" {
			runs(strings.TrimLeft(L.raw[1:], "@-+ \t"))
		}
	}
	switch L.kind {
	case mkRule:
		cands, _ := f.candidates(i)
		special := false
		for _, t := range cands {
			switch t {
			case ".EXPORT_ALL_VARIABLES":
				s.allVars = true
			case ".SECONDEXPANSION":
				s.allTargets = true
			}
			special = special || isSpecialTarget(t)
		}
		if !special {
			prereqs := strings.ReplaceAll(L.prereqs, "|", " ")
			// With a static pattern, or in a pattern rule, '%' in a prerequisite
			// stands for the stem of the protected target matched.
			var subs []string
			for _, t := range cands {
				switch {
				case strings.Contains(L.staticPat, "%") && s.targets[t] && patternMatch(L.staticPat, t):
					subs = append(subs, stem(L.staticPat, t))
				case L.staticPat == "" && strings.Contains(t, "%"):
					for T := range s.targets {
						if patternMatch(t, T) {
							subs = append(subs, stem(t, T))
						}
					}
				}
			}
			if !strings.Contains(prereqs, "%") {
				addTargets(prereqs)
			}
			for _, st := range subs {
				addTargets(strings.ReplaceAll(prereqs, "%", st))
			}
		}
		runs(L.recipe)
	case mkAssign:
		if cands, ok := f.candidates(i); ok {
			for _, v := range cands {
				s.vars[v] = true
			}
		}
		runs(L.value)
	case mkRuleVar:
		runs(L.value)
	case mkDirective:
		if L.word == "export" {
			if strings.TrimSpace(L.value) == "" {
				s.allVars = true
			}
			for _, v := range makeFields(L.value) {
				if strings.Contains(v, "$") {
					if ws, ok := f.wordsOf(v, 0); ok {
						for _, w := range ws {
							s.vars[w] = true
						}
					} else {
						s.allVars = true
					}
				} else {
					s.vars[v] = true
				}
			}
		}
	}
}

var makeFunctions = map[string]bool{
	"subst": true, "patsubst": true, "strip": true, "findstring": true, "filter": true,
	"filter-out": true, "sort": true, "word": true, "wordlist": true, "words": true,
	"firstword": true, "lastword": true, "dir": true, "notdir": true, "suffix": true,
	"basename": true, "addsuffix": true, "addprefix": true, "join": true, "wildcard": true,
	"realpath": true, "abspath": true, "error": true, "warning": true, "info": true,
	"shell": true, "origin": true, "flavor": true, "foreach": true, "if": true, "or": true,
	"and": true, "intcmp": true, "call": true, "eval": true, "file": true, "value": true,
	"let": true, "guile": true,
}

var nameArgFunctions = map[string]bool{"call": true, "value": true, "origin": true, "flavor": true}

// makeRefs calls add with each variable text references, and computed when a
// reference's name is itself computed.
func makeRefs(text string, add func(string), computed func(), depth int) {
	if depth > 32 {
		computed()
		return
	}
	for i := 0; i+1 < len(text); i++ {
		if text[i] != '$' {
			continue
		}
		c := text[i+1]
		switch c {
		case '$':
			i++
			continue
		case '(', '{':
		default:
			add(string(c))
			i++
			continue
		}
		end := skipMakeRef(text, i)
		inner := text[i+2:]
		if end-1 >= i+2 && end <= len(text) && (text[end-1] == ')' || text[end-1] == '}') {
			inner = text[i+2 : end-1]
		}
		i = end - 1
		if name, args := firstWord(inner); makeFunctions[name] && len(name) < len(inner) {
			if nameArgFunctions[name] {
				first := args
				if k := findTopLevel(args, ","); k >= 0 {
					first = args[:k]
				}
				first = strings.TrimSpace(first)
				if strings.Contains(first, "$") {
					computed()
				} else if first != "" {
					add(first)
				}
			}
			makeRefs(args, add, computed, depth+1)
			continue
		}
		vn := inner
		if k := findTopLevel(inner, ":"); k >= 0 {
			vn = inner[:k]
			makeRefs(inner[k+1:], add, computed, depth+1)
		}
		if strings.Contains(vn, "$") {
			computed()
			makeRefs(vn, add, computed, depth+1)
		} else if v := strings.TrimSpace(vn); v != "" {
			add(v)
		}
	}
}

// defaultGoals returns the targets `make` with no goal may build: the first
// target of the first rule make would take (and of earlier rules inside
// conditionals, which may be skipped), and every value assigned to .DEFAULT_GOAL.
func (f *mkFile) defaultGoals() ([]string, bool) {
	set := map[string]bool{}
	known := true
	found := false
	for i := range f.lines {
		L := &f.lines[i]
		switch {
		case L.kind == mkAssign:
			cands, ok := f.candidates(i)
			if !ok {
				known = false
			}
			for _, c := range cands {
				if c == ".DEFAULT_GOAL" {
					ws, ok := f.wordsOf(L.value, 0)
					if !ok {
						known = false
					}
					for _, w := range ws {
						set[w] = true
					}
				}
			}
		case L.kind == mkRule && !found:
			cands, ok := f.candidates(i)
			if !ok {
				known = false
			}
			for _, t := range cands {
				if strings.Contains(t, "%") {
					break
				}
				if strings.HasPrefix(t, ".") && !strings.Contains(t, "/") {
					continue
				}
				set[t] = true
				if L.frame < 0 && ok && len(L.owners) == 0 && !L.manyOwners && !strings.Contains(L.targetText, "$") {
					found = true
				}
				break
			}
		}
	}
	return setList(set), known
}

// evalConds lists the file's conditional lines that call $(eval) or $(guile),
// which run at parse time wherever they are.
func (f *mkFile) evalConds() []string {
	var out []string
	for _, L := range f.lines {
		if L.kind == mkCond && evalCall.MatchString(L.raw) {
			out = append(out, L.text)
		}
	}
	sort.Strings(out)
	return out
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// ruleNames reports whether rule-like line i (rule, target-specific variable, or
// an other line that may expand to a rule) is protected, and the names it is
// reported under.
func (s *mkSpec) ruleNames(f *mkFile, i int) ([]string, bool) {
	L := &f.lines[i]
	switch L.kind {
	case mkOther:
		return s.otherNames(f, i)
	case mkRule, mkRuleVar:
	default:
		return nil, false
	}
	if evalCall.MatchString(L.raw) {
		return []string{"line " + short(L.text)}, true
	}
	cands, known := f.candidates(i)
	if !known {
		return []string{"target " + short(L.targetText)}, true
	}
	var names []string
	for _, t := range cands {
		prot := false
		switch {
		case isSpecialTarget(t):
			if perTargetSpecial[t] && L.kind == mkRule {
				pre := strings.ReplaceAll(L.prereqs, "|", " ")
				ws, ok := makeFields(pre), true
				if strings.Contains(pre, "$") {
					ws, ok = f.wordsOf(pre, 0)
				}
				prot = !ok || len(ws) == 0 || s.allTargets
				for _, w := range ws {
					prot = prot || s.targets[w]
				}
			} else {
				prot = true
			}
		case s.allTargets:
			prot = true
		case strings.Contains(t, "%"):
			for T := range s.targets {
				if patternMatch(t, T) {
					prot = true
					break
				}
			}
		default:
			prot = s.targets[t]
		}
		if prot {
			names = append(names, "target "+t)
		}
	}
	return names, len(names) > 0
}

func (s *mkSpec) otherNames(f *mkFile, i int) ([]string, bool) {
	L := &f.lines[i]
	if evalCall.MatchString(L.raw) {
		return []string{"line " + short(L.text)}, true
	}
	if !strings.Contains(L.text, "$") {
		return nil, false
	}
	cands, known := f.candidates(i)
	prot := !known || s.allTargets
	for _, c := range cands {
		if prot {
			break
		}
		if s.targets[c] || s.vars[c] {
			prot = true
		}
		if strings.Contains(c, "%") {
			for T := range s.targets {
				prot = prot || patternMatch(c, T)
			}
		}
	}
	if !prot {
		return nil, false
	}
	return []string{"line " + short(L.text)}, true
}

func (s *mkSpec) assignNames(f *mkFile, i int) ([]string, bool) {
	L := &f.lines[i]
	cands, known := f.candidates(i)
	prot := !known || s.allVars || evalCall.MatchString(L.raw)
	for _, m := range L.mods {
		prot = prot || m == "export" || m == "unexport"
	}
	for _, c := range cands {
		prot = prot || s.vars[c] || isEnvVar(c)
	}
	if !prot {
		return nil, false
	}
	if !known || len(cands) == 0 {
		return []string{"variable " + short(L.name)}, true
	}
	var names []string
	for _, c := range cands {
		names = append(names, "variable "+c)
	}
	return names, true
}

// lineNames reports whether line i is protected, and under which names.
func (s *mkSpec) lineNames(f *mkFile, i int) ([]string, bool) {
	names, _, prot := s.lineNamesAs(f, i)
	return names, prot
}

// lineNamesAs also says whether the line is protected as a recipe line of a
// protected rule.
func (s *mkSpec) lineNamesAs(f *mkFile, i int) (names []string, asRecipe, prot bool) {
	if !s.active {
		return nil, false, false
	}
	L := &f.lines[i]
	if L.manyOwners {
		names, asRecipe = append(names, "recipe "+short(L.raw)), true
	}
	for _, r := range L.owners {
		if n, ok := s.ruleNames(f, r); ok {
			names, asRecipe = append(names, n...), true
		}
	}
	var n []string
	ok := false
	switch L.kind {
	case mkRule, mkRuleVar, mkOther:
		n, ok = s.ruleNames(f, i)
	case mkAssign:
		n, ok = s.assignNames(f, i)
	case mkDirective:
		n, ok = []string{"directive " + L.word}, true
	}
	if ok {
		names = append(names, n...)
	}
	return sortedNames(names), asRecipe, asRecipe || ok
}

func (s *mkSpec) units(data []byte) ([]unit, bool) {
	f, ok := parseMake(data)
	if !ok {
		return nil, false
	}
	if !s.active {
		return nil, true
	}
	var us []unit
	open, openRule := -1, -1
	for i := range f.lines {
		L := &f.lines[i]
		if L.kind == mkBlank && len(L.owners) == 0 && !L.manyOwners {
			continue
		}
		names, asRecipe, prot := s.lineNamesAs(f, i)
		if !prot {
			open = -1
			continue
		}
		if open >= 0 && asRecipe && L.ctx == us[open].ctx && containsInt(L.owners, openRule) {
			u := &us[open]
			u.end, u.norm, u.names = L.end, u.norm+"\n"+L.raw, sortedNames(u.names, names)
			continue
		}
		key := ""
		switch {
		case asRecipe:
			key = "recipe:" + strings.Join(names, "\x00")
		case L.kind == mkRule || L.kind == mkRuleVar:
			key = "rule:" + strings.Join(makeFields(L.targetText), " ")
			if L.kind == mkRuleVar {
				key += ":var " + L.name
			}
		case L.kind == mkAssign:
			key = "var:" + L.name
		case L.kind == mkDirective:
			key = "dir:" + L.word
		default:
			key = "line:" + L.text
		}
		us = append(us, unit{key: key, ctx: L.ctx, names: names, start: L.start, end: L.end, norm: L.raw})
		open = -1
		if !asRecipe && (L.kind == mkRule || L.kind == mkOther) {
			open, openRule = len(us)-1, i
		}
	}
	return us, true
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (s *mkSpec) anchor(worker []byte, wus []unit, b unit) int {
	if len(wus) > 0 {
		return wus[0].start
	}
	return len(worker)
}

func (s *mkSpec) consistent(base, judged []byte) bool {
	if !s.active {
		return true
	}
	jf, ok := parseMake(judged)
	if !ok {
		return false
	}
	var bconds []string
	if base != nil {
		bf, ok := parseMake(base)
		if !ok {
			return false
		}
		bconds = bf.evalConds()
	}
	if !equalStrings(bconds, jf.evalConds()) {
		return false
	}
	if s.wantGoal && base != nil {
		goals, _ := jf.defaultGoals()
		if !equalStrings(goals, s.goals) {
			return false
		}
	}
	return true
}
