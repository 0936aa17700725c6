package fileparts

import (
	"errors"
	"strings"

	"github.com/countersign/countersign/models/formats/makefile"
	"github.com/countersign/countersign/models/formats/shellword"
)

// Makefile parts (Makefile#targets).
//
//
// The file is read by package makefile, as GNU make reads it (see there); what
// follows is what the judge protects of it.
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
	var bf *makefile.File
	if base != nil {
		var ok bool
		if bf, ok = makefile.Parse(base); !ok {
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
			goals, known := bf.DefaultGoals()
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
		if len(bf.EvalConds()) > 0 {
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
func (s *mkSpec) close(f *makefile.File) {
	done := make([]bool, len(f.Lines))
	frameDone := make([]bool, len(f.Frames))
	for pass := 0; ; pass++ {
		progress := false
		for i := range f.Lines {
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
func (s *mkSpec) absorb(f *makefile.File, i int, frameDone []bool) {
	L := &f.Lines[i]
	if L.Kind != makefile.Recipe && L.Kind != makefile.Blank && makefile.EvalCall.MatchString(L.Raw) {
		// $(eval) at parse time may define rules whose names cannot be known.
		s.allTargets = true
	}
	addVar := func(v string) { s.vars[v] = true }
	computed := func() { s.allVars = true }
	makefile.Refs(L.Raw, addVar, computed)
	for fr := L.Frame; fr >= 0 && !frameDone[fr]; fr = f.Frames[fr].Parent {
		frameDone[fr] = true
		for _, c := range f.Frames[fr].Lines {
			makefile.Refs(f.Lines[c].Raw, addVar, computed)
		}
	}
	if len(L.Owners) > 0 || L.ManyOwners || L.Kind == makefile.Recipe {
		if L.Raw != "" {
			s.runs(f, strings.TrimLeft(L.Raw[1:], "@-+ \t"))
		}
	}
	switch L.Kind {
	case makefile.Rule:
		s.absorbRule(f, i)
		s.runs(f, L.Recipe)
	case makefile.Assign:
		if cands, ok := f.Candidates(i); ok {
			for _, v := range cands {
				s.vars[v] = true
			}
		}
		s.runs(f, L.Value)
	case makefile.RuleVar:
		s.runs(f, L.Value)
	case makefile.Directive:
		if L.Word == "export" {
			s.absorbExport(f, L.Value)
		}
	}
}

// addTargets protects the targets text names, its variables expanded.
func (s *mkSpec) addTargets(f *makefile.File, text string) {
	if !strings.Contains(text, "$") {
		for _, w := range makefile.Fields(text) {
			s.addTarget(w)
		}
		return
	}
	ws, ok := f.Words(text)
	if !ok {
		s.allTargets = true
	}
	for _, w := range ws {
		s.addTarget(w)
	}
}

// runs protects the targets that recipe text runs with make.
func (s *mkSpec) runs(f *makefile.File, text string) {
	for _, words := range shellword.Split(text, true) {
		makeTargetsIn(words, func(t string) {
			if t == DefaultGoal {
				for _, g := range s.goals {
					s.addTarget(g)
				}
				return
			}
			s.addTargets(f, t)
		})
	}
}

// absorbRule protects the prerequisites of protected rule line i (with '%'
// substituted) and notes the special targets that widen what is protected.
func (s *mkSpec) absorbRule(f *makefile.File, i int) {
	L := &f.Lines[i]
	cands, _ := f.Candidates(i)
	special := false
	for _, t := range cands {
		switch t {
		case ".EXPORT_ALL_VARIABLES":
			s.allVars = true
		case ".SECONDEXPANSION":
			s.allTargets = true
		}
		special = special || makefile.IsSpecialTarget(t)
	}
	if special {
		return
	}
	prereqs := strings.ReplaceAll(L.Prereqs, "|", " ")
	// With a static pattern, or in a pattern rule, '%' in a prerequisite stands for
	// the stem of the protected target matched.
	var subs []string
	for _, t := range cands {
		switch {
		case strings.Contains(L.StaticPat, "%") && s.targets[t] && makefile.PatternMatch(L.StaticPat, t):
			subs = append(subs, makefile.Stem(L.StaticPat, t))
		case L.StaticPat == "" && strings.Contains(t, "%"):
			for T := range s.targets {
				if makefile.PatternMatch(t, T) {
					subs = append(subs, makefile.Stem(t, T))
				}
			}
		}
	}
	if !strings.Contains(prereqs, "%") {
		s.addTargets(f, prereqs)
	}
	for _, st := range subs {
		s.addTargets(f, strings.ReplaceAll(prereqs, "%", st))
	}
}

// absorbExport protects the variables an export directive names (all of them for
// a bare export or a name that cannot be worked out).
func (s *mkSpec) absorbExport(f *makefile.File, value string) {
	if strings.TrimSpace(value) == "" {
		s.allVars = true
	}
	for _, v := range makefile.Fields(value) {
		if !strings.Contains(v, "$") {
			s.vars[v] = true
			continue
		}
		ws, ok := f.Words(v)
		if !ok {
			s.allVars = true
		}
		for _, w := range ws {
			s.vars[w] = true
		}
	}
}
