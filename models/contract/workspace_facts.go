package contract

import (
	"regexp"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/formats/glob"
)

// WorkspaceFacts is what stack detection knows about a workspace: its top-level
// names, its package.json scripts and Makefile targets, the tools configured in it and
// the tools on PATH. DetectWorkspace reads them from a directory; tests and the
// labelled set write them by hand.
type WorkspaceFacts struct {
	// Files are the top-level names; directories end in "/".
	Files []string `json:"files"`
	// Scripts are the scripts package.json defines (npm's "no test specified"
	// placeholder left out).
	Scripts []string `json:"scripts,omitempty"`
	// ScriptCommands maps each of Scripts to its command, for ScriptRuns conditions.
	ScriptCommands map[string]string `json:"script_commands,omitempty"`
	// Targets are the Makefile's targets.
	Targets []string `json:"targets,omitempty"`
	// Configured maps a tool (pytest, ruff, mypy) to the file that configures it.
	Configured map[string]string `json:"configured,omitempty"`
	// Tools are the programs found on PATH, of those looked for.
	Tools []string `json:"tools,omitempty"`
	// Problems are what could not be read (a package.json that is not JSON, a file
	// too large), in words.
	Problems []string `json:"problems,omitempty"`
}

// Holds reports whether condition c holds in the workspace, and says why in a few
// words either way: "go.mod found", "no package.json script lint", "ruff configured
// in pyproject.toml".
func (f WorkspaceFacts) Holds(c Condition) (bool, string) {
	switch {
	case c.File != "":
		if name, ok := f.file(c.File); ok {
			return true, name + " found"
		}
		return false, "no " + c.File
	case c.Script != "":
		if slices.Contains(f.Scripts, c.Script) {
			return true, "package.json has a " + c.Script + " script"
		}
		return false, "no package.json script " + c.Script
	case c.Target != "":
		if slices.Contains(f.Targets, c.Target) {
			return true, "Makefile has a " + c.Target + " target"
		}
		return false, "no Makefile target " + c.Target
	case c.Config != "":
		if where, ok := f.Configured[c.Config]; ok {
			return true, c.Config + " configured in " + where
		}
		return false, c.Config + " not configured"
	case c.Tool != "":
		if slices.Contains(f.Tools, c.Tool) {
			return true, c.Tool + " on PATH"
		}
		return false, c.Tool + " not on PATH"
	case c.ScriptRuns != "":
		return f.scriptRuns(c.ScriptRuns)
	}
	return false, "empty condition"
}

// file finds a top-level name matching pattern (a name or a glob; a trailing slash
// asks for a directory) and returns it without its slash.
func (f WorkspaceFacts) file(pattern string) (string, bool) {
	wantDir := strings.HasSuffix(pattern, "/")
	pattern = strings.TrimSuffix(pattern, "/")
	for _, name := range f.Files {
		isDir := strings.HasSuffix(name, "/")
		name = strings.TrimSuffix(name, "/")
		if wantDir && !isDir {
			continue
		}
		if name == pattern || glob.Match(pattern, name) {
			return name, true
		}
	}
	return "", false
}

// String describes a condition as the rules page and event data show it: "file
// go.mod", "script test", "target test", "config ruff", "tool python3".
func (c Condition) String() string {
	switch {
	case c.File != "":
		return "file " + c.File
	case c.Script != "":
		return "script " + c.Script
	case c.Target != "":
		return "target " + c.Target
	case c.Config != "":
		return "config " + c.Config
	case c.Tool != "":
		return "tool " + c.Tool
	case c.ScriptRuns != "":
		return "script_runs " + c.ScriptRuns
	}
	return "(empty)"
}

// StackMatch is a stack a workspace matched: why, and the commands that apply to it.
type StackMatch struct {
	Name string `json:"name"`
	// Reason is the detection condition that held, in words ("go.mod found").
	Reason string `json:"reason"`
	// Commands are, for each activity of the stack in rule order, the first command
	// whose conditions hold.
	Commands []MatchedCommand `json:"commands"`
	// Left are the activities none of whose commands applies, with why, as the last
	// (most general) variant says it ("typecheck: no package.json script typecheck").
	Left []string `json:"left,omitempty"`
	// Results is the first results entry whose conditions hold, if any.
	Results *TestResults `json:"results,omitempty"`
	Protect []string     `json:"protect,omitempty"`
}

// MatchedCommand is a stack command that applies to a workspace, with why.
type MatchedCommand struct {
	StackCommand
	// Reason says why the command is there: its own conditions when it has any
	// ("package.json has a test script; pnpm-lock.yaml found"), else the stack's
	// detection ("go.mod found").
	Reason string `json:"reason"`
	// Missing are the command's tools that are not on PATH, of those looked for.
	Missing []string `json:"missing,omitempty"`
}

// MatchStacks returns the stacks of rules that the workspace matches, in rule order,
// each with the commands that apply to it. Pure: it reads nothing but its arguments.
func MatchStacks(rules Rules, facts WorkspaceFacts) []StackMatch {
	var out []StackMatch
	for _, st := range rules.Stacks {
		reason, ok := "", false
		for _, c := range st.Detect {
			if held, why := facts.Holds(c); held {
				reason, ok = why, true
				break
			}
		}
		if !ok {
			continue
		}
		m := StackMatch{Name: st.Name, Reason: reason, Protect: slices.Clone(st.Protect)}
		var activities []string
		for _, sc := range st.Commands {
			if !slices.Contains(activities, sc.Activity) {
				activities = append(activities, sc.Activity)
			}
		}
		for _, act := range activities {
			var why []string
			found := false
			for _, sc := range st.Commands {
				if sc.Activity != act {
					continue
				}
				held, reasons := facts.all(sc.When)
				if !held {
					why = reasons // the last, most general variant's
					continue
				}
				if len(reasons) == 0 {
					reasons = []string{reason}
				}
				mc := MatchedCommand{StackCommand: sc, Reason: strings.Join(reasons, "; ")}
				mc.Tools, mc.When = slices.Clone(sc.Tools), slices.Clone(sc.When)
				for _, t := range sc.Tools {
					if !slices.Contains(facts.Tools, t) {
						mc.Missing = append(mc.Missing, t)
					}
				}
				m.Commands = append(m.Commands, mc)
				found = true
				break
			}
			if !found {
				m.Left = append(m.Left, act+": "+strings.Join(why, ", "))
			}
		}
		for _, r := range st.Results {
			if held, _ := facts.all(r.When); held {
				res := r
				res.When = slices.Clone(r.When)
				m.Results = &res
				break
			}
		}
		out = append(out, m)
	}
	return out
}

// all reports whether every condition holds; the reasons are those of the held ones
// when all hold, else those of the failed ones.
func (f WorkspaceFacts) all(conds []Condition) (bool, []string) {
	var held, failed []string
	for _, c := range conds {
		ok, why := f.Holds(c)
		if ok {
			held = append(held, why)
		} else {
			failed = append(failed, why)
		}
	}
	if len(failed) > 0 {
		return false, failed
	}
	return true, held
}

// ParseScriptRuns splits a ScriptRuns condition "script: regexp" into the script's
// name and its compiled expression.
func ParseScriptRuns(cond string) (string, *regexp.Regexp, error) {
	name, expr, ok := strings.Cut(cond, ":")
	name, expr = strings.TrimSpace(name), strings.TrimSpace(expr)
	if !ok || name == "" || expr == "" {
		return "", nil, Errorf(EINVALID, "script_runs %q: want \"script: regexp\"", cond)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", nil, Errorf(EINVALID, "script_runs %q: %v", cond, err)
	}
	return name, re, nil
}

// scriptRuns says whether the script a ScriptRuns condition names runs a command its
// expression matches.
func (f WorkspaceFacts) scriptRuns(cond string) (bool, string) {
	name, re, err := ParseScriptRuns(cond)
	if err != nil {
		return false, err.Error()
	}
	cmd, ok := f.ScriptCommands[name]
	if !ok {
		return false, "no package.json script " + name
	}
	if re.MatchString(cmd) {
		return true, "package.json's " + name + " script runs " + quote(Truncate(cmd, 80))
	}
	return false, "package.json's " + name + " script does not match " + re.String()
}
