package fileparts

import (
	"strings"

	"github.com/countersign/countersign/models/formats/makefile"
)

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
func (s *mkSpec) ruleNames(f *makefile.File, i int) ([]string, bool) {
	L := &f.Lines[i]
	switch L.Kind {
	case makefile.Other:
		return s.otherNames(f, i)
	case makefile.Rule, makefile.RuleVar:
	default:
		return nil, false
	}
	if makefile.EvalCall.MatchString(L.Raw) {
		return []string{"line " + short(L.Text)}, true
	}
	cands, known := f.Candidates(i)
	if !known {
		return []string{"target " + short(L.TargetText)}, true
	}
	var names []string
	for _, t := range cands {
		prot := false
		switch {
		case makefile.IsSpecialTarget(t):
			if perTargetSpecial[t] && L.Kind == makefile.Rule {
				pre := strings.ReplaceAll(L.Prereqs, "|", " ")
				ws, ok := makefile.Fields(pre), true
				if strings.Contains(pre, "$") {
					ws, ok = f.Words(pre)
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
				if makefile.PatternMatch(t, T) {
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

func (s *mkSpec) otherNames(f *makefile.File, i int) ([]string, bool) {
	L := &f.Lines[i]
	if makefile.EvalCall.MatchString(L.Raw) {
		return []string{"line " + short(L.Text)}, true
	}
	if !strings.Contains(L.Text, "$") {
		return nil, false
	}
	cands, known := f.Candidates(i)
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
				prot = prot || makefile.PatternMatch(c, T)
			}
		}
	}
	if !prot {
		return nil, false
	}
	return []string{"line " + short(L.Text)}, true
}

func (s *mkSpec) assignNames(f *makefile.File, i int) ([]string, bool) {
	L := &f.Lines[i]
	cands, known := f.Candidates(i)
	prot := !known || s.allVars || makefile.EvalCall.MatchString(L.Raw)
	for _, m := range L.Mods {
		prot = prot || m == "export" || m == "unexport"
	}
	for _, c := range cands {
		prot = prot || s.vars[c] || isEnvVar(c)
	}
	if !prot {
		return nil, false
	}
	if !known || len(cands) == 0 {
		return []string{"variable " + short(L.Name)}, true
	}
	var names []string
	for _, c := range cands {
		names = append(names, "variable "+c)
	}
	return names, true
}

// lineNames reports whether line i is protected, and under which names.
func (s *mkSpec) lineNames(f *makefile.File, i int) ([]string, bool) {
	names, _, prot := s.lineNamesAs(f, i)
	return names, prot
}

// lineNamesAs also says whether the line is protected as a recipe line of a
// protected rule.
func (s *mkSpec) lineNamesAs(f *makefile.File, i int) (names []string, asRecipe, prot bool) {
	if !s.active {
		return nil, false, false
	}
	L := &f.Lines[i]
	if L.ManyOwners {
		names, asRecipe = append(names, "recipe "+short(L.Raw)), true
	}
	for _, r := range L.Owners {
		if n, ok := s.ruleNames(f, r); ok {
			names, asRecipe = append(names, n...), true
		}
	}
	var n []string
	ok := false
	switch L.Kind {
	case makefile.Rule, makefile.RuleVar, makefile.Other:
		n, ok = s.ruleNames(f, i)
	case makefile.Assign:
		n, ok = s.assignNames(f, i)
	case makefile.Directive:
		n, ok = []string{"directive " + L.Word}, true
	}
	if ok {
		names = append(names, n...)
	}
	return sortedNames(names), asRecipe, asRecipe || ok
}

func (s *mkSpec) units(data []byte) ([]unit, bool) {
	f, ok := makefile.Parse(data)
	if !ok {
		return nil, false
	}
	if !s.active {
		return nil, true
	}
	var us []unit
	open, openRule := -1, -1
	for i := range f.Lines {
		L := &f.Lines[i]
		if L.Kind == makefile.Blank && len(L.Owners) == 0 && !L.ManyOwners {
			continue
		}
		names, asRecipe, prot := s.lineNamesAs(f, i)
		if !prot {
			open = -1
			continue
		}
		if open >= 0 && asRecipe && L.Ctx == us[open].ctx && containsInt(L.Owners, openRule) {
			u := &us[open]
			u.end, u.norm, u.names = L.End, u.norm+"\n"+L.Raw, sortedNames(u.names, names)
			continue
		}
		key := ""
		switch {
		case asRecipe:
			key = "recipe:" + strings.Join(names, "\x00")
		case L.Kind == makefile.Rule || L.Kind == makefile.RuleVar:
			key = "rule:" + strings.Join(makefile.Fields(L.TargetText), " ")
			if L.Kind == makefile.RuleVar {
				key += ":var " + L.Name
			}
		case L.Kind == makefile.Assign:
			key = "var:" + L.Name
		case L.Kind == makefile.Directive:
			key = "dir:" + L.Word
		default:
			key = "line:" + L.Text
		}
		us = append(us, unit{key: key, ctx: L.Ctx, names: names, start: L.Start, end: L.End, norm: L.Raw})
		open = -1
		if !asRecipe && (L.Kind == makefile.Rule || L.Kind == makefile.Other) {
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
	jf, ok := makefile.Parse(judged)
	if !ok {
		return false
	}
	var bconds []string
	if base != nil {
		bf, ok := makefile.Parse(base)
		if !ok {
			return false
		}
		bconds = bf.EvalConds()
	}
	if !equalStrings(bconds, jf.EvalConds()) {
		return false
	}
	if s.wantGoal && base != nil {
		goals, _ := jf.DefaultGoals()
		if !equalStrings(goals, s.goals) {
			return false
		}
	}
	return true
}
