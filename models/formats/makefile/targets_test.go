package makefile

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// issueMakefile is the Makefile on which the two readers disagreed (issue 32): a
// define block holding "fake:", a target list continued with a backslash and
// "check:" inside ifeq. The contract code's reader said [check fake]; GNU make
// sees check, lint and test.
const issueMakefile = `define HELP
fake:
	@echo not a rule
endef

test \
  lint:
	@echo $@

ifeq (1,1)
check:
	@echo check
endif
.PHONY: test lint check
`

// targetCases are Makefiles on which Targets must agree with GNU make's own
// database. Conditionals here are all true: Targets does not evaluate them.
var targetCases = map[string]string{
	"issue 32":       issueMakefile,
	"workspace test": "all: test lint\ntest:\n\tgo test\nlint::\n\tgolint\nX ::= y\nY ?= z\n%.o: %.c\n\tcc\n",
	"prerequisites are no targets": ".PHONY: test build\nCC := gcc\nbuild: main.o\n\t$(CC) -o app main.o\n" +
		"test: build # run the tests\n\t./app --self-test\n",
	"variable in the target list": "BIN = app tool\n$(BIN): main.c\n\tcc -o $@ main.c\n",
	"grouped and static":          "a b &: src\n\ttouch a b\nobjs = x.o y.o\n$(objs): %.o: %.c\n\tcc $<\n",
	"assignments and recipes":     "test := yes\ncheck: ;\n\ttest -f x\nCOLON = a:b\nlint: ; @true\n",
	"comment and continuation":    "# test: in a comment\nbuild: ; @true # lint: here too\nlong\\\n name: ; @true\n",
	"define with a nested define": "define A\ndefine B\nx:\nendef\ny:\nendef\nz:\n\t@true\n",
}

// TestTargetsAgreeWithGNUMake asks GNU make for its database (make -p) of each
// Makefile and compares the explicit targets it lists with Targets.
func TestTargetsAgreeWithGNUMake(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	for name, mk := range targetCases {
		t.Run(name, func(t *testing.T) {
			want := gnuTargets(t, mk)
			if got := Targets([]byte(mk)); !slices.Equal(got, want) {
				t.Errorf("Targets = %q, GNU make's database = %q", got, want)
			}
		})
	}
	if got := Targets([]byte(issueMakefile)); !slices.Equal(got, []string{"check", "lint", "test"}) {
		t.Errorf("issue 32's Makefile: Targets = %q, want [check lint test]", got)
	}
}

// gnuTargets runs `make -pRrq` on mk and returns the targets of its "# Files"
// section, sorted, leaving out what make marks "Not a target" and the names
// Targets leaves out by its contract (a leading '.', a '%').
func gnuTargets(t *testing.T, mk string) []string {
	dir := t.TempDir()
	file := filepath.Join(dir, "Makefile")
	if err := os.WriteFile(file, []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-pRrq", "-f", file)
	cmd.Dir = dir
	out, _ := cmd.Output() // -q exits 1 when something would be built
	section := string(out)
	start := strings.Index(section, "\n# Files\n")
	end := strings.Index(section, "\n# files hash-table stats")
	if start < 0 || end < start {
		t.Fatalf("no file database in make -p output:\n%s", out)
	}
	var names []string
	notTarget := false
	for _, line := range strings.Split(section[start:end], "\n") {
		switch {
		case line == "# Not a target:":
			notTarget = true
		case line == "" || line[0] == '#' || line[0] == '\t':
		default:
			name, _, ok := strings.Cut(line, ":")
			if ok && !notTarget && !strings.HasPrefix(name, ".") && !strings.Contains(name, "%") &&
				!slices.Contains(names, name) {
				names = append(names, name)
			}
			notTarget = false
		}
	}
	slices.Sort(names)
	return names
}
