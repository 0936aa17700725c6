package fileparts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gnuBase's test target fails (ls of a directory that does not exist) after
// printing what it runs with. Every attack below tries to make `make test` pass or
// print something else; the judged Makefile must behave exactly as the base.
const gnuBase = `GOTEST = echo go test
PKGS = ./...
.PHONY: test build lint

build:
	@echo build $(BFLAGS)

test: build
	@$(GOTEST) $(PKGS) GOFLAGS=$$GOFLAGS HOME=$$HOME
	@ls /nonexistent-countersign-dir

lint:
	@echo lint
`

var gnuAttacks = []struct{ name, change string }{
	{"recipe replaced", "s:\t@ls /nonexistent-countersign-dir:\t@true"},
	{"variable changed", "s:GOTEST = echo go test:GOTEST = echo skipped"},
	{"variable appended", "+GOTEST += ; exit 0 ;\n"},
	{"prerequisite recipe changed", "s:\t@echo build $(BFLAGS):\t@echo built"},
	{"recipe line after a hidden assignment", "s:\t@ls /nonexistent-countersign-dir\n:\t@ls /nonexistent-countersign-dir\nifeq (0,1)\nX = 1\nendif\n\t@echo appended\n"},
	{"recipe line after a hidden rule", "s:\t@ls /nonexistent-countersign-dir\n:\t@ls /nonexistent-countersign-dir\nifdef NOPE\nx:\nendif\n\t@echo appended\n"},
	{"assignment wrapped in a false conditional", "s:GOTEST = echo go test:ifeq (0,1)\nGOTEST = echo go test\nendif"},
	{".IGNORE on test", "+.IGNORE: test\n"},
	{".IGNORE for everything", "+.IGNORE:\n"},
	{"MAKEFLAGS ignore errors", "^MAKEFLAGS += -i\n"},
	{"one shell and exit", "+.ONESHELL:\nGOTEST += ; exit 0 ;\n"},
	{"SHELL replaced", "^SHELL = /bin/true\n"},
	{".SHELLFLAGS replaced", "^.SHELLFLAGS = -c true\n"},
	{"PATH with a fake ls", "^PATH := $(CURDIR)/fake:$(PATH)\n"},
	{"HOME changed", "^HOME = /tmp/evil\n"},
	{"exported tool flags", "+export GOFLAGS = -run=none\n"},
	{"bare export", "+GOFLAGS = -run=none\nexport\n"},
	{"target-specific variable", "+test: GOTEST = echo skipped\n"},
	{"pattern-specific variable", "+%: GOTEST = echo skipped\n"},
	{"eval line", "+$(eval GOTEST = echo skipped)\n"},
	{"eval in a conditional", "+ifeq ($(eval GOTEST = echo skipped),)\nendif\n"},
	{"computed target overriding the recipe", "+T = test\n$(T): ; @true\n"},
	{"computed target by concatenation", "+E =\nte$(E)st: ; @true\n"},
	{"computed rule line", "+RULE = test: ; @true\n$(RULE)\n"},
	{"function in target list", "+$(firstword test x): ; @true\n"},
	{"multi-target rule", "+lint test: ; @true\n"},
	{"define block", "+define GOTEST\necho skipped\nendef\n"},
	{"override", "+override GOTEST = echo skipped\n"},
	{"shell assignment", "+GOTEST != echo echo skipped\n"},
	{"undefine", "+undefine GOTEST\n"},
	{"computed variable name", "+G = GO\n$(G)TEST = echo skipped\n"},
	{"recipe prefix changed", "^.RECIPEPREFIX = >\n"},
	{"include of a rule file", "+-include evil.mk\n"},
	{"unexport PATH", "+unexport PATH\n"},
	{".DEFAULT recipe", "+.DEFAULT:\n\t@true\n"},
	{"test no longer phony with a file named test", "s:.PHONY: test build lint:.PHONY: build lint"},
	{"second expansion", "+.SECONDEXPANSION:\n"},
	{"inert: assignment inside a continued comment", "+# note \\\nGOTEST = echo skipped\n"},
	{"tab assignment outside a rule", "^\tGOTEST = echo skipped\n"},
	{"fair edit of lint", "s:\t@echo lint:\t@echo lint --fix"},
}

// applyChange applies a change: "s:old:new" replaces, "+text" appends, "^text"
// prepends.
func applyChange(t *testing.T, base, change string) string {
	switch change[0] {
	case '+':
		return base + change[1:]
	case '^':
		return change[1:] + base
	}
	parts := strings.SplitN(change[2:], ":", 2)
	return replaceOnce(t, base, parts[0], parts[1])
}

func runMake(t *testing.T, makefile string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"Makefile": makefile,
		"evil.mk":  "test: ; @true\n",
		"test":     "a file named test\n",
		"fake/ls":  "#!/bin/sh\nexit 0\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "test")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp/home"}
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("make: %v", err)
	}
	return out.String(), code
}

func TestRestoreMakefileAgainstGNUMake(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	wantOut, wantCode := runMake(t, gnuBase)
	if wantCode == 0 || !strings.Contains(wantOut, "go test") {
		t.Fatalf("base: exit %d, output %q", wantCode, wantOut)
	}
	names := TargetsRun([]string{"make test"})
	for _, a := range gnuAttacks {
		t.Run(a.name, func(t *testing.T) {
			worker := applyChange(t, gnuBase, a.change)
			judged, changed, err := Restore("Makefile", "targets", []byte(gnuBase), []byte(worker), names)
			if err != nil {
				t.Fatal(err)
			}
			out, code := runMake(t, string(judged))
			if out != wantOut || code != wantCode {
				t.Errorf("judged Makefile: exit %d, output %q; base: exit %d, output %q\nchanged %q\njudged:\n%s", code, out, wantCode, wantOut, changed, judged)
			}
			harmless := strings.HasPrefix(a.name, "fair") || strings.HasPrefix(a.name, "inert")
			if harmless && len(changed) != 0 {
				t.Errorf("harmless edit reported as %q", changed)
			}
			if !harmless && len(changed) == 0 {
				t.Errorf("attack not reported:\n%s", judged)
			}
		})
	}
}
