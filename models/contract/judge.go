package contract

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The judge's settings in a contract: Verification.Protect adds to the protected
// paths of the project rules' stacks; TestsMayChange skips the restore (for tasks
// whose job is to write tests) but keeps the report and the test floor; HeldOut adds
// tests the worker never sees.

// HeldOutTest is a test file the worker never sees: added to the judge's view before
// the verify commands run, at Path (relative to the workspace), with Content.
type HeldOutTest struct {
	Path    string `json:"path" yaml:"path"`
	Content string `json:"content" yaml:"content"`
}

// Bounds of the judge's settings in a contract.
const (
	maxProtect        = 64
	maxHeldOut        = 32
	maxHeldOutBytes   = 256 << 10 // one held-out file
	maxHeldOutTotal   = 1 << 20   // all of a contract's held-out files
	maxProtectPattern = 256
)

// validateJudge checks the contract's protect globs and held-out tests.
func (v *Verification) validateJudge(fe *FieldErrors) {
	if len(v.Protect) > maxProtect {
		fe.Add("verification.protect", fmt.Sprintf("at most %d patterns", maxProtect))
	}
	for i, p := range v.Protect {
		if msg := ProtectPatternProblem(p); msg != "" {
			fe.Add("verification.protect["+strconv.Itoa(i)+"]", msg)
		}
	}
	if len(v.HeldOut) > maxHeldOut {
		fe.Add("verification.held_out", fmt.Sprintf("at most %d held-out tests", maxHeldOut))
	}
	total := 0
	seen := map[string]bool{}
	for i, h := range v.HeldOut {
		key := "verification.held_out[" + strconv.Itoa(i) + "]."
		if msg := workspacePathProblem(h.Path); msg != "" {
			fe.Add(key+"path", msg)
		} else if seen[path.Clean(h.Path)] {
			fe.Add(key+"path", "names the same file as an earlier held-out test")
		}
		seen[path.Clean(h.Path)] = true
		if strings.TrimSpace(h.Content) == "" {
			fe.Add(key+"content", "is required")
		} else if len(h.Content) > maxHeldOutBytes {
			fe.Add(key+"content", fmt.Sprintf("must be at most %d KiB", maxHeldOutBytes>>10))
		}
		total += len(h.Content)
	}
	if total > maxHeldOutTotal {
		fe.Add("verification.held_out", fmt.Sprintf("held-out tests must total at most %d KiB", maxHeldOutTotal>>10))
	}
}

// ProtectPatternProblem says what is wrong with a protect pattern, or "" when it is
// usable: a glob relative to the workspace ("*_test.go" matches a base name anywhere,
// "tests/**" a tree), optionally followed by "#part" naming protected parts of the
// files it matches (package.json#scripts, Makefile#targets, pyproject.toml#[tool.pytest]).
func ProtectPatternProblem(p string) string {
	glob, part, hasPart := strings.Cut(p, "#")
	switch {
	case strings.TrimSpace(p) == "" || strings.TrimSpace(glob) == "":
		return "must not be empty"
	case len(p) > maxProtectPattern:
		return fmt.Sprintf("must be at most %d characters", maxProtectPattern)
	case strings.ContainsRune(p, 0) || strings.HasPrefix(glob, "/"):
		return "must be a pattern relative to the workspace"
	case glob == ".." || strings.HasPrefix(glob, "../") || strings.Contains(glob, "/../"):
		return "must not climb out of the workspace"
	case hasPart && strings.TrimSpace(part) == "":
		return `names no part after "#"`
	case hasPart && !knownPart(strings.TrimSpace(part)):
		return "names an unknown part " + quote(part) + ": use scripts, targets, a go.mod directive (replace), .member or [table]"
	case !validProtectGlob(strings.TrimSpace(glob)):
		return "is not a valid glob: relative, '/'-separated, each segment ** or a pattern"
	}
	return ""
}

// Redacted returns the contract without its held-out tests' paths and contents, as
// anyone but the roles that may set them (admin, editor, lead) and the runner reads
// it: a worker must never see the tests held back from it. HeldOutCount keeps their
// number.
func (c Contract) Redacted() Contract {
	if len(c.Verification.HeldOut) == 0 {
		return c
	}
	c.Verification.HeldOutCount = len(c.Verification.HeldOut)
	c.Verification.HeldOut = nil
	return c
}

// GoModParts are the go.mod directives a protect pattern may name as a part
// ("go.mod#replace"): the judge restores those lines of the base's go.mod.
var GoModParts = []string{"go", "toolchain", "godebug", "require", "exclude", "replace", "retract", "tool", "ignore"}

// knownPart reports whether part is one the judge reads: a package.json's scripts, a
// Makefile's targets, a go.mod directive (GoModParts), a JSON member (.jest), a TOML
// table or an INI section ([tool.pytest]).
func knownPart(part string) bool {
	switch {
	case part == "scripts" || part == "targets" || slices.Contains(GoModParts, part):
		return true
	case len(part) > 1 && strings.HasPrefix(part, "."):
		return true
	case len(part) > 2 && strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]"):
		return true
	}
	return false
}
