package contract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models/formats/glob"
)

// Limits of the stacks in the project rules.
const (
	maxStacks        = 50
	maxStackCommands = 50
	maxStackEntries  = 100 // conditions, protected paths, results entries, tools
)

var (
	// scriptNameRE: package.json script and Makefile target names (test, test:e2e, lint-fix).
	scriptNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9:._/-]{0,99}$`)
	// toolNameRE: a program looked for on PATH (go, python3, cargo-clippy, g++).
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]{0,63}$`)
)

// validateStacks checks the stacks of the rules into fe, keyed by path:
// stacks[0].name, stacks[1].detect[0].file, stacks[1].commands[2].command,
// stacks[2].protect[1], stacks[0].results[0].format, …
func validateStacks(stacks []Stack, fe *FieldErrors) {
	if len(stacks) > maxStacks {
		fe.Add("stacks", fmt.Sprintf("at most %d stacks", maxStacks))
	}
	seen := map[string]bool{}
	for i, st := range stacks {
		key := "stacks[" + strconv.Itoa(i) + "]"
		switch {
		case !activityNameRE.MatchString(st.Name):
			fe.Add(key+".name", "stack names are 1-64 lower-case letters, digits, '.', '_' or '-'")
		case seen[st.Name]:
			fe.Add(key+".name", quote(st.Name)+" is defined twice")
		}
		seen[st.Name] = true
		if len(st.Detect) == 0 {
			fe.Add(key+".detect", "at least one condition is required: how the stack is recognised")
		}
		validateConditions(key+".detect", st.Detect, fe)
		if len(st.Commands) == 0 {
			fe.Add(key+".commands", "at least one command is required")
		} else if len(st.Commands) > maxStackCommands {
			fe.Add(key+".commands", fmt.Sprintf("at most %d commands", maxStackCommands))
		}
		for j, sc := range st.Commands {
			ck := key + ".commands[" + strconv.Itoa(j) + "]"
			if !activityNameRE.MatchString(sc.Activity) {
				fe.Add(ck+".activity", "activity names are 1-64 lower-case letters, digits, '.', '_' or '-'")
			}
			validateCommand(ck+".command", sc.Command, fe)
			if len(sc.Description) > 200 {
				fe.Add(ck+".description", "must be at most 200 characters")
			}
			validateConditions(ck+".when", sc.When, fe)
			validateTools(ck+".tools", sc.Tools, fe)
		}
		if len(st.Protect) > maxStackEntries {
			fe.Add(key+".protect", fmt.Sprintf("at most %d paths", maxStackEntries))
		}
		for j, p := range st.Protect {
			if len(p) > MaxPathLen || !validProtectGlob(p) {
				fe.Add(key+".protect["+strconv.Itoa(j)+"]", "must be a relative glob with forward slashes and no '..' (*_test.go, tests/**)")
			}
		}
		validateProtectList(key+".pins", st.Pins, fe)
		validateInstall(key+".install", st.Install, fe)
		if len(st.Results) > maxStackEntries {
			fe.Add(key+".results", fmt.Sprintf("at most %d entries", maxStackEntries))
		}
		for j, r := range st.Results {
			rk := key + ".results[" + strconv.Itoa(j) + "]"
			if !slices.Contains(ResultFormats, r.Format) {
				fe.Add(rk+".format", "must be one of "+strings.Join(ResultFormats, ", "))
			}
			validateCommand(rk+".command", r.Command, fe)
			validateConditions(rk+".when", r.When, fe)
			if r.Canary != "" && !slices.Contains(CanaryKinds, r.Canary) {
				fe.Add(rk+".canary", "must be one of "+strings.Join(CanaryKinds, ", ")+", or empty for none")
			}
		}
	}
}

// validateProtectList checks a stack's list of protect patterns (its pins).
func validateProtectList(key string, pats []string, fe *FieldErrors) {
	if len(pats) > maxStackEntries {
		fe.Add(key, fmt.Sprintf("at most %d paths", maxStackEntries))
	}
	for j, p := range pats {
		if len(p) > MaxPathLen || !validProtectGlob(p) {
			fe.Add(key+"["+strconv.Itoa(j)+"]", "must be a relative glob with forward slashes and no '..' (go.sum, vendor/**, go.mod#replace)")
		}
	}
}

// validateInstall checks a stack's install commands.
func validateInstall(key string, ins []InstallCommand, fe *FieldErrors) {
	if len(ins) > maxStackEntries {
		fe.Add(key, fmt.Sprintf("at most %d entries", maxStackEntries))
	}
	for j, in := range ins {
		ik := key + "[" + strconv.Itoa(j) + "]"
		validateCommand(ik+".command", in.Command, fe)
		validateConditions(ik+".when", in.When, fe)
		validateTools(ik+".tools", in.Tools, fe)
	}
}

func validateCommand(key, cmd string, fe *FieldErrors) {
	switch {
	case strings.TrimSpace(cmd) == "":
		fe.Add(key, "needs a command")
	case len(cmd) > maxCommandLen:
		fe.Add(key, fmt.Sprintf("the command must be at most %d characters", maxCommandLen))
	case strings.ContainsRune(cmd, 0):
		fe.Add(key, "the command must not contain NUL")
	}
}

func validateTools(key string, tools []string, fe *FieldErrors) {
	if len(tools) > maxStackEntries {
		fe.Add(key, fmt.Sprintf("at most %d tools", maxStackEntries))
	}
	for i, t := range tools {
		if !toolNameRE.MatchString(t) {
			fe.Add(key+"["+strconv.Itoa(i)+"]", "must be a program name (letters, digits, '.', '_', '+', '-'), not a path")
		}
	}
}

// validateConditions checks that each condition sets exactly one well-formed field.
func validateConditions(key string, conds []Condition, fe *FieldErrors) {
	if len(conds) > maxStackEntries {
		fe.Add(key, fmt.Sprintf("at most %d conditions", maxStackEntries))
	}
	for i, c := range conds {
		ck := key + "[" + strconv.Itoa(i) + "]"
		set := 0
		for _, v := range []string{c.File, c.Script, c.Target, c.Config, c.Tool, c.ScriptRuns} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			fe.Add(ck, "set exactly one of file, script, target, config, tool or script_runs")
			continue
		}
		switch {
		case c.File != "":
			name := strings.TrimSuffix(c.File, "/")
			if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || len(name) > 255 {
				fe.Add(ck+".file", "must be a top-level file name or glob (go.mod, playwright.config.*), with a trailing slash for a directory")
			} else if !glob.Valid(name) {
				fe.Add(ck+".file", "is not a valid glob")
			}
		case c.Script != "":
			if !scriptNameRE.MatchString(c.Script) {
				fe.Add(ck+".script", "must be a package.json script name")
			}
		case c.Target != "":
			if !scriptNameRE.MatchString(c.Target) {
				fe.Add(ck+".target", "must be a Makefile target name")
			}
		case c.Config != "":
			if _, ok := ConfigTools[c.Config]; !ok {
				fe.Add(ck+".config", "unknown; the tools recognised as configured are "+strings.Join(slices.Sorted(maps.Keys(ConfigTools)), ", "))
			}
		case c.Tool != "":
			if !toolNameRE.MatchString(c.Tool) {
				fe.Add(ck+".tool", "must be a program name (letters, digits, '.', '_', '+', '-'), not a path")
			}
		case c.ScriptRuns != "":
			if name, _, err := ParseScriptRuns(c.ScriptRuns); err != nil || !scriptNameRE.MatchString(name) || len(c.ScriptRuns) > 512 {
				fe.Add(ck+".script_runs", `must be "script: regexp" (test: \\bjest\\b), at most 512 characters`)
			}
		}
	}
}
