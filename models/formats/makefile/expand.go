package makefile

import "strings"

// simpleRef returns the variable name w refers to when w is exactly one reference
// to a literal name ($(X), ${X}, $X).
func simpleRef(w string) (string, bool) {
	if len(w) == 2 && w[0] == '$' && w[1] != '$' && w[1] != '(' && w[1] != '{' {
		return w[1:], true
	}
	if len(w) > 3 && w[0] == '$' && (w[1] == '(' || w[1] == '{') && SkipRef(w, 0) == len(w) {
		inner := w[2 : len(w)-1]
		if inner != "" && !strings.ContainsAny(inner, " \t,:$=%()") {
			return inner, true
		}
	}
	return "", false
}

const maxAlternatives = 256

// expMemo caches what each variable may expand to; entries being computed are
// busy, so a variable that refers to itself is unknown rather than endless.
type expMemo struct {
	words map[string]*candSet
	alts  map[string]*candSet
}

// expansions are computed per variable once, so a hostile file's fan-out
// (X = $(Y) a thousand times, Y = $(Z) a thousand times, ...) costs linear time.
func (f *File) memo() *expMemo {
	if f.cache == nil || !f.sealed {
		f.cache = &expMemo{words: map[string]*candSet{}, alts: map[string]*candSet{}}
	}
	return f.cache
}

// Words returns every word text may expand to, over-approximated with every
// value the file assigns each variable, or known=false when text calls a function,
// uses a computed name, or refers to a variable that refers to itself.
func (f *File) Words(text string) ([]string, bool) {
	return f.wordsIn(text, f.memo())
}

func (f *File) wordsIn(text string, m *expMemo) ([]string, bool) {
	var out []string
	for _, w := range Fields(text) {
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

func (f *File) varWords(name string, m *expMemo) ([]string, bool) {
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
	m.words[name] = &candSet{out, known}
	return out, known
}

// Alternatives returns the texts w may expand to, each variable taking one of its
// values whole; unknown when a variable is appended to (+=) or run (!=).
func (f *File) Alternatives(w string) ([]string, bool) {
	return f.altsIn(w, f.memo())
}

func (f *File) altsIn(w string, m *expMemo) ([]string, bool) {
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
			end = SkipRef(w, i)
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

func (f *File) varAlts(name string, m *expMemo) ([]string, bool) {
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
	m.alts[name] = &candSet{out, known}
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

// Candidates returns, cached, the names line i defines: targets of a rule or
// target-specific variable, the variable of an assignment, what an other line may
// expand to.
func (f *File) Candidates(i int) ([]string, bool) {
	L := &f.Lines[i]
	if L.cands != nil {
		return L.cands.words, L.cands.known
	}
	var words []string
	known := true
	switch L.Kind {
	case Rule, RuleVar:
		if strings.Contains(L.TargetText, "$") {
			ws, ok := f.Words(L.TargetText)
			words, known = splitNames(ws), ok
		} else {
			words = Fields(L.TargetText)
		}
	case Assign:
		if strings.Contains(L.Name, "$") {
			words, known = f.Words(L.Name)
		} else {
			words = []string{L.Name}
		}
	case Other:
		if strings.Contains(L.Text, "$") {
			ws, ok := f.Words(L.Text)
			words, known = splitNames(ws), ok
		}
	}
	L.cands = &candSet{words, known}
	return words, known
}
