package makefile

import (
	"regexp"
	"sort"
	"strings"
)

// EvalCall finds a call of $(eval …) or $(guile …), which run at parse time and
// may define rules and variables whose names cannot be known before.
var EvalCall = regexp.MustCompile(`\$[({](eval|guile)(\s|[)}]|$)`)

var specialTargetRe = regexp.MustCompile(`^\.[A-Z_]+$`)

// IsSpecialTarget reports whether t is named like one of make's special targets
// (.PHONY, .SUFFIXES, .DEFAULT_GOAL …: a dot and capitals).
func IsSpecialTarget(t string) bool { return specialTargetRe.MatchString(t) }

// Stem is the part of name that '%' in pattern matches (PatternMatch holds).
func Stem(pattern, name string) string {
	k := strings.IndexByte(pattern, '%')
	if k < 0 || !PatternMatch(pattern, name) {
		return ""
	}
	return name[k : len(name)-(len(pattern)-k-1)]
}

// PatternMatch reports whether name matches a make pattern: '%' (the first one)
// stands for any run of characters; without '%' the names must be equal.
func PatternMatch(pattern, name string) bool {
	i := strings.IndexByte(pattern, '%')
	if i < 0 {
		return pattern == name
	}
	pre, suf := pattern[:i], pattern[i+1:]
	return len(name) >= len(pre)+len(suf) && strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf)
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

// Refs calls add with each variable text references, and computed when a
// reference's name is itself computed.
func Refs(text string, add func(string), computed func()) { refs(text, add, computed, 0) }

func refs(text string, add func(string), computed func(), depth int) {
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
		end := SkipRef(text, i)
		inner := text[i+2:]
		if end-1 >= i+2 && end <= len(text) && (text[end-1] == ')' || text[end-1] == '}') {
			inner = text[i+2 : end-1]
		}
		i = end - 1
		if name, args := FirstWord(inner); makeFunctions[name] && len(name) < len(inner) {
			if nameArgFunctions[name] {
				first := args
				if k := FindTopLevel(args, ","); k >= 0 {
					first = args[:k]
				}
				first = strings.TrimSpace(first)
				if strings.Contains(first, "$") {
					computed()
				} else if first != "" {
					add(first)
				}
			}
			refs(args, add, computed, depth+1)
			continue
		}
		vn := inner
		if k := FindTopLevel(inner, ":"); k >= 0 {
			vn = inner[:k]
			refs(inner[k+1:], add, computed, depth+1)
		}
		if strings.Contains(vn, "$") {
			computed()
			refs(vn, add, computed, depth+1)
		} else if v := strings.TrimSpace(vn); v != "" {
			add(v)
		}
	}
}

// DefaultGoals returns the targets `make` with no goal may build: the first
// target of the first rule make would take (and of earlier rules inside
// conditionals, which may be skipped), and every value assigned to .DEFAULT_GOAL.
func (f *File) DefaultGoals() ([]string, bool) {
	set := map[string]bool{}
	known := true
	found := false
	for i := range f.Lines {
		L := &f.Lines[i]
		switch {
		case L.Kind == Assign:
			cands, ok := f.Candidates(i)
			if !ok {
				known = false
			}
			for _, c := range cands {
				if c == ".DEFAULT_GOAL" {
					ws, ok := f.Words(L.Value)
					if !ok {
						known = false
					}
					for _, w := range ws {
						set[w] = true
					}
				}
			}
		case L.Kind == Rule && !found:
			cands, ok := f.Candidates(i)
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
				if L.Frame < 0 && ok && len(L.Owners) == 0 && !L.ManyOwners && !strings.Contains(L.TargetText, "$") {
					found = true
				}
				break
			}
		}
	}
	return sortedKeys(set), known
}

// EvalConds lists the file's conditional lines that call $(eval) or $(guile),
// which run at parse time wherever they are.
func (f *File) EvalConds() []string {
	var out []string
	for _, L := range f.Lines {
		if L.Kind == Cond && EvalCall.MatchString(L.Raw) {
			out = append(out, L.Text)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
