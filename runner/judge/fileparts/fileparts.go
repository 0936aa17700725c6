// Package fileparts computes the judge's version of a file of which only some parts
// are protected: the worker's file with those parts put back as they were at the
// base revision, everything else (the worker's fair edits, its formatting) left
// byte for byte as the worker wrote it.
//
// A part is written after '#' in a protect rule ("package.json#scripts"):
//
//	scripts        package.json: the scripts the contract runs (names, see ScriptsRun),
//	               their pre/post hooks, and, transitively, the scripts those run
//	               (npm run x, run-s, npm-run-all globs) as they are at base.
//	.KEY           a JSON file: the top-level member KEY ("package.json#.jest").
//	targets        a Makefile: the targets the contract runs (names, see TargetsRun),
//	               transitively their prerequisites, the targets their recipes run
//	               with $(MAKE), the variables all of those reference, exports,
//	               includes, special targets (.PHONY lines naming them, .ONESHELL, ...)
//	               and $(eval) lines.
//	[a.b]          a file whose name ends in .toml: the table a.b and every table and
//	               array of tables below it ([a.b.c], [[a.b.d]]), plus dotted keys and
//	               inline tables elsewhere that define something in or above it.
//	[name]         any other file: the INI section [name] (setup.cfg, tox.ini, pytest.ini).
//	replace        a go.mod: the lines of that directive (replace, require, exclude,
//	               go, toolchain, godebug, retract, tool, ignore), read with
//	               golang.org/x/mod/modfile; see gomod.go.
//
// Whether "[...]" is TOML or INI is decided by the file name alone, so
// "pyproject.toml#[tool.pytest]" and "setup.cfg#[tool:pytest]" both work and
// "setup.cfg#[tool.pytest]" is the INI section named "tool.pytest".
//
// Every file format is read the way its consumer reads it where that matters to the
// judge: package.json as JSON (npm's JSON.parse: the last of duplicate keys wins),
// Makefiles as GNU make reads them (rule context, recipe prefix, continuation lines,
// conditionals of which any branch may be the live one), TOML per the spec (quoted
// and dotted keys, multi-line strings and arrays), INI sections as pytest's
// iniconfig splits them (a header is a line starting with '[' at column 0; lines
// end at any of Python's line boundaries).
//
// After splicing the base's parts into the worker's file, Restore reads the result
// again and checks that its protected parts are exactly the base's, in the same
// order and under the same conditionals or tables; if not (a worker's edit that
// defeats the splice), the judged file is the base's whole file and changed says
// WholeFile. So a judged file either has the base's protected parts or is the base.
//
// Known gaps, outside what one file's parts can cover (the caller's to protect; the
// default stacks' rules in models protect .npmrc, .yarnrc*, pytest.ini and the like
// at any depth, and FilesRun names the files the protected scripts and recipes run):
//
//   - package.json: fields scripts read indirectly ("config" through
//     $npm_package_config_*), test-runner configuration kept in package.json (protect
//     "package.json#.jest", "#.mocha", "#.ava" as parts), dependencies that put a
//     binary of the same name as the test runner in node_modules/.bin, and .npmrc
//     (script-shell, ignore-scripts).
//   - pyproject.toml / setup.cfg: other pytest configuration files that pytest reads
//     first (pytest.ini, .pytest.ini, tox.ini), plugins registered through
//     [project.entry-points.pytest11] (protect that table as a part too) or by a new
//     dependency, PYTEST_ADDOPTS in the environment; configparser-based readers
//     (setuptools, tox) also take an indented "[x]" line for a section header.
//   - Makefile: see make.go: the content of included makefiles, implicit rules that
//     build a protected target's prerequisite files, recursive make into other
//     directories or makefiles, $(shell) and != at parse time in unprotected lines,
//     environment variables of the judge's environment beyond a list of well-known
//     ones, a file named like a protected target that is not .PHONY at base, and a
//     GNUmakefile or makefile beside the Makefile (make reads those first).
package fileparts

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/countersign/countersign/models/formats/toml"
)

// MaxFileBytes is the largest base or worker file Restore accepts.
const MaxFileBytes = 1 << 20

// WholeFile in Restore's changed list means the judged file is the base's whole
// file (or absent, if the file did not exist at base) rather than the worker's with
// parts restored: the worker's file could not be read as its format (invalid JSON,
// NUL bytes in a Makefile), the worker deleted a file with protected parts, or the
// worker's edits defeated a faithful splice (protected parts wrapped in a new
// conditional, a new first target where `make` runs the default goal).
const WholeFile = "(whole file)"

// DefaultGoal is the name TargetsRun returns for a bare `make` (no targets named):
// Restore resolves it against the base Makefile (.DEFAULT_GOAL or its first target)
// and also requires the judged Makefile to have the same default goal.
const DefaultGoal = ".DEFAULT_GOAL"

// ErrTooLarge is returned by Restore when base or worker is over MaxFileBytes.
var ErrTooLarge = errors.New("fileparts: file larger than 1 MiB")

type partKind int

const (
	partScripts partKind = iota
	partMember
	partTargets
	partTOML
	partINI
	partGoMod
)

type part struct {
	kind partKind
	name string   // member name, INI section name
	path []string // TOML key path
}

func parsePart(file, p string) (part, error) {
	switch {
	case p == "scripts":
		return part{kind: partScripts}, nil
	case p == "targets":
		return part{kind: partTargets}, nil
	case goModDirectives[p]:
		if !isGoMod(file) {
			return part{}, fmt.Errorf("fileparts: part %q is a go.mod directive, and %s is no go.mod", p, file)
		}
		return part{kind: partGoMod, name: p}, nil
	case strings.HasPrefix(p, ".") && len(p) > 1:
		return part{kind: partMember, name: p[1:]}, nil
	case len(p) > 2 && p[0] == '[' && p[len(p)-1] == ']':
		inner := p[1 : len(p)-1]
		if strings.ContainsAny(inner, "\r\n") {
			return part{}, fmt.Errorf("fileparts: part %q spans lines", p)
		}
		if strings.HasSuffix(strings.ToLower(path.Base(file)), ".toml") {
			keys, ok := toml.ParseKey(inner)
			if !ok {
				return part{}, fmt.Errorf("fileparts: part %q is not a TOML table name", p)
			}
			return part{kind: partTOML, path: keys}, nil
		}
		if strings.TrimSpace(inner) == "" {
			return part{}, fmt.Errorf("fileparts: part %q names no section", p)
		}
		return part{kind: partINI, name: inner}, nil
	}
	return part{}, fmt.Errorf("fileparts: unknown part %q (want scripts, targets, a go.mod directive, .member or [table])", p)
}

// CheckPart reports whether Restore understands part for a file named file (only
// its base name's extension matters): nil, or an error saying what is wrong.
func CheckPart(file, part string) error {
	_, err := parsePart(file, part)
	return err
}

// Restore returns the judge's version of file: worker's content with the protected
// parts named by part as they are in base. A part present at base replaces the
// worker's (or is put back if the worker removed it); a part absent at base is
// removed from the worker's file; everything else stays byte for byte.
//
// names are the script or target names the contract runs (from ScriptsRun or
// TargetsRun); with none, a scripts or targets part protects nothing. They are
// ignored for .member, TOML and INI parts. base == nil means
// the file did not exist at base; worker == nil means the worker deleted it, and
// judged == nil means the judged workspace has no such file.
//
// changed lists, sorted and without repeats, the protected parts that differ
// between worker and judged: "scripts.test", "scripts" (the member as a whole),
// "target test", "variable GOTEST", "directive include", "line <text>",
// "[tool.pytest.ini_options]", "tool.pytest.ini_options.addopts" (a dotted key),
// "[tool:pytest]", "jest" (a .member part), and WholeFile. changed is empty exactly
// when judged equals worker. Comments, blank lines and (TOML) formatting inside a
// protected part are not changes; the worker's bytes are kept for them.
//
// Restore returns an error, and no file, when base or worker is over MaxFileBytes,
// when part is not understood, or when base cannot be read as its format (a
// package.json that is not a JSON object, a Makefile with NUL bytes, a computed
// .RECIPEPREFIX or conditionals nested over 1000 deep). It never panics on any
// input, and its time is roughly linear in the input (a few seconds at worst for
// 1 MiB built to be slow).
func Restore(file, part string, base, worker []byte, names []string) (judged []byte, changed []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			judged, changed, err = nil, nil, fmt.Errorf("fileparts: internal error restoring %s#%s: %v", file, part, r)
		}
	}()
	return restore(file, part, base, worker, names)
}

// restore is Restore without the recover, so fuzzing sees panics.
func restore(file, p string, base, worker []byte, names []string) ([]byte, []string, error) {
	if len(base) > MaxFileBytes || len(worker) > MaxFileBytes {
		return nil, nil, ErrTooLarge
	}
	pt, err := parsePart(file, p)
	if err != nil {
		return nil, nil, err
	}
	switch pt.kind {
	case partScripts:
		return restoreJSON(base, worker, jsonSpec{scripts: true, names: names})
	case partMember:
		return restoreJSON(base, worker, jsonSpec{member: pt.name})
	case partTargets:
		spec, err := newMakeSpec(base, names)
		if err != nil {
			return nil, nil, err
		}
		return restoreUnits(spec, base, worker)
	case partTOML:
		return restoreUnits(tomlSpec{path: pt.path}, base, worker)
	case partGoMod:
		return restoreGoMod(pt.name, base, worker)
	default:
		return restoreUnits(iniSpec{section: pt.name}, base, worker)
	}
}

// unit is one protected piece of a line-oriented file (a Makefile rule with its
// recipe, a variable assignment, a TOML table, an INI section).
type unit struct {
	key   string   // what the unit defines, for matching base against worker
	ctx   string   // where it is: enclosing conditionals (make), enclosing table (TOML)
	names []string // what changed reports when the unit is touched
	start int      // byte range in its file
	end   int
	norm  string // the text that counts, without comments, blank lines, final newline
}

// unitSpec reads one line-oriented format with one protected part.
type unitSpec interface {
	// units returns data's protected units in file order, or ok=false when data
	// cannot be read as the format.
	units(data []byte) (us []unit, ok bool)
	// anchor is where base unit b goes in worker when no base unit before it was
	// placed and none after it matched a worker unit.
	anchor(worker []byte, wus []unit, b unit) int
	// consistent reports whether judged keeps base's file-wide properties that are
	// not units (the Makefile default goal).
	consistent(base, judged []byte) bool
}

func restoreUnits(s unitSpec, base, worker []byte) ([]byte, []string, error) {
	if base == nil && worker == nil {
		return nil, nil, nil
	}
	var bus []unit
	if base != nil {
		var ok bool
		if bus, ok = s.units(base); !ok {
			return nil, nil, errors.New("fileparts: the base file cannot be read")
		}
	}
	if worker == nil {
		if len(bus) == 0 {
			return nil, nil, nil
		}
		return clone(base), sortedNames(unitNames(bus), WholeFile), nil
	}
	if bytes.Equal(base, worker) {
		return clone(worker), nil, nil
	}
	wus, ok := s.units(worker)
	if !ok {
		return wholeBase(base, worker, nil)
	}
	if sameUnits(bus, wus) && s.consistent(base, worker) {
		return clone(worker), nil, nil
	}
	judged, changed := splice(s, base, worker, bus, wus)
	if jus, ok := s.units(judged); ok && len(changed) > 0 && sameUnits(bus, jus) && s.consistent(base, judged) {
		return judged, changed, nil
	}
	return wholeBase(base, worker, diffNames(bus, wus))
}

// wholeBase is the fallback: the base's whole file (nil if there was none).
func wholeBase(base, worker []byte, names []string) ([]byte, []string, error) {
	if bytes.Equal(base, worker) && (base == nil) == (worker == nil) {
		return clone(worker), nil, nil
	}
	return clone(base), sortedNames(names, WholeFile), nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func sameUnits(a, b []unit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].key != b[i].key || a[i].ctx != b[i].ctx || a[i].norm != b[i].norm {
			return false
		}
	}
	return true
}

func unitNames(us []unit) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.names...)
	}
	return out
}

// diffNames lists the names whose units differ between a and b (in content,
// context or order among the units of that name).
func diffNames(a, b []unit) []string {
	seq := func(us []unit) map[string][]string {
		m := map[string][]string{}
		for _, u := range us {
			for _, n := range u.names {
				m[n] = append(m[n], u.key+"\x00"+u.ctx+"\x00"+u.norm)
			}
		}
		return m
	}
	ma, mb := seq(a), seq(b)
	var out []string
	for n, sa := range ma {
		if !equalStrings(sa, mb[n]) {
			out = append(out, n)
		}
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sortedNames(lists ...any) []string {
	set := map[string]bool{}
	for _, l := range lists {
		switch v := l.(type) {
		case string:
			set[v] = true
		case []string:
			for _, s := range v {
				set[s] = true
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

type edit struct {
	start, end int
	text       []byte
	insert     bool
	seq        int
}

// splice puts base's units into worker: base units are matched to worker units
// with the same key and context, in order (greedily, so linear time); a matched
// worker unit is replaced by its base unit (kept as is if they compare equal), an
// unmatched worker unit is removed, and an unmatched base unit is inserted right
// after the base unit before it, or before the first matched one, or at the spec's
// anchor.
func splice(s unitSpec, base, worker []byte, bus, wus []unit) ([]byte, []string) {
	match, wMatched := matchUnits(bus, wus)
	p := &splicePlan{}
	text := func(b unit) []byte { return base[b.start:b.end] }
	anchor := -1
	var pending []int
	for i, b := range bus {
		wi := match[i]
		if wi < 0 {
			p.note(b.names)
			if anchor >= 0 {
				p.add(edit{start: anchor, end: anchor, text: text(b), insert: true})
			} else {
				pending = append(pending, i)
			}
			continue
		}
		w := wus[wi]
		for _, k := range pending {
			p.add(edit{start: w.start, end: w.start, text: text(bus[k]), insert: true})
		}
		pending = nil
		if w.norm == b.norm {
			p.add(edit{start: w.start, end: w.end, text: worker[w.start:w.end]})
		} else {
			p.note(b.names)
			p.note(w.names)
			t := text(b)
			if !bytes.HasSuffix(t, []byte("\n")) && w.end < len(worker) {
				t = append(append([]byte{}, t...), '\n')
			}
			p.add(edit{start: w.start, end: w.end, text: t})
		}
		anchor = w.end
	}
	for _, k := range pending {
		pos := s.anchor(worker, wus, bus[k])
		p.add(edit{start: pos, end: pos, text: text(bus[k]), insert: true})
	}
	for i, w := range wus {
		if !wMatched[i] {
			p.note(w.names)
			p.add(edit{start: w.start, end: w.end})
		}
	}
	var names []string
	for n := range p.changed {
		names = append(names, n)
	}
	return applyEdits(worker, base, p.edits), sortedNames(names)
}

// matchUnits pairs each base unit with the first worker unit of the same key and
// context after the previous pair (-1: none), and says which worker units are
// paired.
func matchUnits(bus, wus []unit) (match []int, wMatched []bool) {
	queues := map[string][]int{}
	for i, u := range wus {
		k := u.key + "\x00" + u.ctx
		queues[k] = append(queues[k], i)
	}
	match = make([]int, len(bus))
	wMatched = make([]bool, len(wus))
	last := -1
	for i, b := range bus {
		match[i] = -1
		k := b.key + "\x00" + b.ctx
		q := queues[k]
		for len(q) > 0 && q[0] <= last {
			q = q[1:]
		}
		if len(q) > 0 {
			match[i], wMatched[q[0]], last = q[0], true, q[0]
			q = q[1:]
		}
		queues[k] = q
	}
	return match, wMatched
}

// splicePlan collects splice's edits, numbered in the order made, and the names
// of the units they change.
type splicePlan struct {
	edits   []edit
	changed map[string]bool
}

func (p *splicePlan) note(names []string) {
	if p.changed == nil {
		p.changed = map[string]bool{}
	}
	for _, n := range names {
		p.changed[n] = true
	}
}

func (p *splicePlan) add(e edit) {
	e.seq = len(p.edits)
	p.edits = append(p.edits, e)
}

// applyEdits applies edits to worker in order of position (inserts before a
// replacement at the same place, then in the order made).
func applyEdits(worker, base []byte, edits []edit) []byte {
	sort.SliceStable(edits, func(i, j int) bool {
		a, b := edits[i], edits[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.insert != b.insert {
			return a.insert
		}
		return a.seq < b.seq
	})
	out := make([]byte, 0, len(worker)+len(base))
	cur := 0
	for _, e := range edits {
		if e.start < cur || e.end < e.start || e.end > len(worker) {
			continue // cannot happen: units do not overlap
		}
		out = append(out, worker[cur:e.start]...)
		if e.insert {
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, e.text...)
			if !bytes.HasSuffix(e.text, []byte("\n")) {
				out = append(out, '\n')
			}
		} else {
			out = append(out, e.text...)
		}
		cur = e.end
	}
	return append(out, worker[cur:]...)
}
