package fileparts

import (
	"regexp"
	"strings"

	"github.com/countersign/countersign/models/formats/makefile"
)

// makefileNames are the files GNU make reads, in its order of preference.
var makefileNames = []string{"GNUmakefile", "makefile", "Makefile"}

// maxMakefiles bounds the makefiles makeRecipes reads (the root's and those they
// include).
const maxMakefiles = 16

// makeRecipes reads, as shell, the recipe lines that Restore protects for the
// targets named so far, in every Makefile at the root, with the Makefile's
// variables expanded where their value is written literally. The makefiles a
// protected include line names are protected whole and read the same way.
func (r *runFinder) makeRecipes() {
	if len(r.targets) == 0 {
		return
	}
	names := setList(r.targets)
	queue := append([]string{}, makefileNames...)
	seen := map[string]bool{}
	for len(queue) > 0 && len(seen) < maxMakefiles {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		data, ok := r.read(name)
		if !ok || len(data) > MaxFileBytes {
			continue
		}
		spec, err := newMakeSpec(data, names)
		if err != nil {
			continue
		}
		f, ok := makefile.Parse(data)
		if !ok {
			continue
		}
		for i := range f.Lines {
			L := &f.Lines[i]
			_, asRecipe, prot := spec.lineNamesAs(f, i)
			var text string
			switch {
			case !prot:
				continue
			case asRecipe:
				text = L.Raw
			case L.Kind == makefile.Rule && L.Recipe != "":
				text = L.Recipe
			case L.Kind == makefile.Directive && (L.Word == "include" || L.Word == "-include" || L.Word == "sinclude"):
				queue = append(queue, r.included(f, L.Value)...)
				continue
			default:
				continue
			}
			for _, t := range expandMake(f, recipeText(text), 0) {
				r.shell(t, runState{}, 1)
			}
		}
	}
}

// recipeText is a recipe line as make hands it to the shell, less make's own
// expansion: the recipe prefix (tab) and the @ - + flags removed.
func recipeText(raw string) string {
	s := strings.TrimLeft(raw, " \t")
	return strings.TrimLeft(s, "@-+ \t")
}

var makeVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// expandMake expands make's references in recipe text: $$ to $, a variable whose
// value the Makefile writes literally to that value (each value it may have, one
// text per value, at most a few), $(shell x) to the shell's $(x), $(MAKE) to make,
// and anything else to a shell variable FilesRun cannot resolve.
func expandMake(f *makefile.File, text string, depth int) []string {
	outs := []string{""}
	for i := 0; i < len(text); {
		c := text[i]
		if c != '$' || i+1 >= len(text) {
			appendAll(outs, text[i:i+1])
			i++
			continue
		}
		next := text[i+1]
		switch {
		case next == '$':
			appendAll(outs, "$")
			i += 2
			continue
		case next != '(' && next != '{':
			appendAll(outs, "${MAKE_AUTOMATIC_VARIABLE}")
			i += 2
			continue
		}
		end := makefile.SkipRef(text, i)
		inner := text[i+2 : max(i+2, end-1)]
		i = end
		outs = expandRef(f, inner, outs, depth)
	}
	return outs
}

func appendAll(outs []string, s string) {
	for k := range outs {
		outs[k] += s
	}
}

// expandRef appends the expansions of one $(inner) to every text in outs.
func expandRef(f *makefile.File, inner string, outs []string, depth int) []string {
	if fn, arg, ok := strings.Cut(inner, " "); ok && fn == "shell" {
		appendAll(outs, "$("+arg+")")
		return outs
	}
	switch {
	case inner == "MAKE":
		appendAll(outs, "make")
		return outs
	case inner == "CURDIR":
		appendAll(outs, ".")
		return outs
	case !makeVarName.MatchString(inner) || depth > 4 || len(f.Values(inner)) == 0:
		appendAll(outs, "${MAKE_UNRESOLVED}")
		return outs
	}
	var next []string
	for _, v := range f.Values(inner) {
		for _, e := range expandMake(f, strings.TrimSpace(v), depth+1) {
			for _, o := range outs {
				if len(next) < 16 {
					next = append(next, o+e)
				}
			}
		}
	}
	return next
}

// included protects the makefiles an include line names (its words, make's
// variables expanded) and returns them for reading.
func (r *runFinder) included(f *makefile.File, value string) []string {
	var out []string
	for _, text := range expandMake(f, value, 0) {
		for _, w := range strings.Fields(text) {
			if strings.ContainsAny(w, "$*?[") {
				continue // computed or a glob: not a name FilesRun can protect
			}
			if rel, _ := resolve("", w); rel != "" {
				r.files[rel] = true
				out = append(out, rel)
			}
		}
	}
	return out
}
