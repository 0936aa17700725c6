package fileparts

import (
	"reflect"
	"strings"
	"testing"
)

const baseMakefile = `GOTEST = go test
PKGS = ./...

.PHONY: test lint build

build:
	go build ./...

test: build
	$(GOTEST) $(PKGS)

lint:
	golangci-lint run
`

// replaceOnce returns s with old replaced by new exactly once.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("%q occurs %d times", old, strings.Count(s, old))
	}
	return strings.Replace(s, old, new, 1)
}

func TestRestoreMakefile(t *testing.T) {
	test := TargetsRun([]string{"make test"})
	fair := replaceOnce(t, baseMakefile, "golangci-lint run", "golangci-lint run --fix")
	noTest := replaceOnce(t, fair, "test: build\n\t$(GOTEST) $(PKGS)\n", "")
	cases := []restoreCase{
		{
			name:    "test recipe replaced by @true, lint edited fairly",
			worker:  replaceOnce(t, fair, "\t$(GOTEST) $(PKGS)", "\t@true"),
			want:    fair,
			changed: []string{"target test"},
		},
		{
			name:    "variable the recipe uses changed",
			worker:  replaceOnce(t, fair, "GOTEST = go test", "GOTEST = true"),
			want:    fair,
			changed: []string{"variable GOTEST"},
		},
		{
			name:    "variable appended to further down",
			worker:  fair + "GOTEST += -run XXX_none\n",
			want:    fair,
			changed: []string{"variable GOTEST"},
		},
		{
			name:    "prerequisite's recipe changed",
			worker:  replaceOnce(t, fair, "\tgo build ./...", "\tgit checkout base -- . && go build ./..."),
			want:    fair,
			changed: []string{"target build"},
		},
		{
			name:   "fair edit of an unrelated target only",
			worker: fair + "\nfmt:\n\tgofmt -w .\n",
			want:   fair + "\nfmt:\n\tgofmt -w .\n",
		},
		{
			name:   "comments and blank lines in a protected recipe are no change",
			worker: replaceOnce(t, fair, "\t$(GOTEST) $(PKGS)\n", "# run the tests\n\n\t$(GOTEST) $(PKGS)\n"),
			want:   replaceOnce(t, fair, "\t$(GOTEST) $(PKGS)\n", "# run the tests\n\n\t$(GOTEST) $(PKGS)\n"),
		},
		{
			name:    "test no longer phony",
			worker:  replaceOnce(t, fair, ".PHONY: test lint build", ".PHONY: lint build"),
			want:    fair,
			changed: []string{"target .PHONY"},
		},
		{
			name:    "recipe line smuggled through a conditional that hides an assignment",
			worker:  replaceOnce(t, fair, "\t$(GOTEST) $(PKGS)\n", "\t$(GOTEST) $(PKGS)\nifeq (0,1)\nX = 1\nendif\n\tcp fake.xml report.xml\n"),
			want:    replaceOnce(t, fair, "\t$(GOTEST) $(PKGS)\n", "\t$(GOTEST) $(PKGS)\nifeq (0,1)\nX = 1\nendif\n"),
			changed: []string{"target test"},
		},
		{
			name:    "protected variable wrapped in a false conditional is moved out of it",
			worker:  replaceOnce(t, fair, "GOTEST = go test\n", "ifeq (0,1)\nGOTEST = go test\nendif\n"),
			want:    "ifeq (0,1)\nendif\n" + fair,
			changed: []string{"variable GOTEST"},
		},
		{
			name:    "protected rule inside a conditional whose condition changed: the base file",
			base:    "ifeq ($(CI),true)\ntest:\n\tgo test -race ./...\nelse\ntest:\n\tgo test ./...\nendif\n",
			worker:  "ifeq ($(CI),nope)\ntest:\n\tgo test -race ./...\nelse\ntest:\n\tgo test ./...\nendif\n",
			want:    "ifeq ($(CI),true)\ntest:\n\tgo test -race ./...\nelse\ntest:\n\tgo test ./...\nendif\n",
			changed: []string{WholeFile, "target test"},
		},
		{
			name:    "variable a protected conditional tests",
			base:    "ifeq ($(CI),true)\nFLAGS = -race\nendif\ntest:\n\tgo test $(FLAGS) ./...\n",
			worker:  "CI = false\nifeq ($(CI),true)\nFLAGS = -race\nendif\ntest:\n\tgo test $(FLAGS) ./...\n",
			want:    "ifeq ($(CI),true)\nFLAGS = -race\nendif\ntest:\n\tgo test $(FLAGS) ./...\n",
			changed: []string{"variable CI"},
		},
		{
			name:    "pattern rule and computed target names",
			worker:  fair + "T = test\n$(T): ; @true\n%: ; @true\n",
			want:    fair + "T = test\n",
			changed: []string{"target %", "target test"},
		},
		{
			name:    "eval, export, .ONESHELL and include added",
			worker:  fair + "$(eval GOTEST = true)\nexport GOFLAGS = -run=XXX_none\n.ONESHELL:\n-include evil.mk\n",
			want:    fair,
			changed: []string{"directive -include", "line $(eval GOTEST = true)", "target .ONESHELL", "variable GOFLAGS"},
		},
		{
			name:    "target-specific variable on the test target",
			worker:  fair + "test: GOTEST = true\n",
			want:    fair,
			changed: []string{"target test"},
		},
		{
			name:    "pattern-specific variable matching the test target",
			worker:  fair + "%: GOTEST = true\n",
			want:    fair,
			changed: []string{"target %"},
		},
		{
			name:    "MAKEFLAGS set to ignore errors",
			worker:  "MAKEFLAGS += -i\n" + fair,
			want:    fair,
			changed: []string{"variable MAKEFLAGS"},
		},
		{
			name:    "test rule deleted is put back after the unit before it",
			worker:  noTest,
			want:    replaceOnce(t, noTest, "\tgo build ./...\n", "\tgo build ./...\ntest: build\n\t$(GOTEST) $(PKGS)\n"),
			changed: []string{"target test"},
		},
		{
			name:    "a rule line computed from a variable",
			worker:  fair + "RULE = test: ; @true\n$(RULE)\n",
			want:    fair + "RULE = test: ; @true\n",
			changed: []string{"line $(RULE)"},
		},
		{
			name:    "double-colon rule, .DEFAULT and unexport",
			worker:  fair + "test::\n\t@true\n.DEFAULT:\n\t@true\nunexport CI\n",
			want:    fair,
			changed: []string{"directive unexport", "target .DEFAULT", "target test"},
		},
		{
			name:    "rules defined by $(eval) at base: every rule is protected",
			base:    "define RULE\n$(1):\n\tgo test ./$(1)/...\nendef\n$(foreach p,unit e2e,$(eval $(call RULE,$(p))))\ntest: unit e2e\nfmt:\n\tgofmt -l .\n",
			worker:  "define RULE\n$(1):\n\tgo test ./$(1)/...\nendef\n$(foreach p,unit e2e,$(eval $(call RULE,$(p))))\ntest: unit e2e\nfmt:\n\tgofmt -w .\ne2e:\n\t@true\n",
			want:    "define RULE\n$(1):\n\tgo test ./$(1)/...\nendef\n$(foreach p,unit e2e,$(eval $(call RULE,$(p))))\ntest: unit e2e\nfmt:\n\tgofmt -l .\n",
			changed: []string{"target e2e", "target fmt"},
		},
		{
			name:    "worker deleted the Makefile",
			deleted: true,
			want:    baseMakefile,
			changed: []string{WholeFile, "target .PHONY", "target build", "target test", "variable GOTEST", "variable PKGS"},
		},
		{
			name:    "NUL byte in the worker's Makefile",
			worker:  fair + "\x00",
			want:    baseMakefile,
			changed: []string{WholeFile},
		},
	}
	for i := range cases {
		cases[i].file, cases[i].part, cases[i].names = "Makefile", "targets", test
		if cases[i].base == "" {
			cases[i].base = baseMakefile
		}
	}
	runRestoreCases(t, cases)
}

func TestRestoreMakefileRecursiveAndDefaultGoal(t *testing.T) {
	base := `all: check

check:
	$(MAKE) unit integration

unit:
	go test ./internal/...

integration:
	go test ./e2e/...

docs:
	mkdocs build
`
	cases := []restoreCase{
		{
			name:    "a target run by $(MAKE) in a protected recipe",
			names:   []string{DefaultGoal},
			worker:  replaceOnce(t, base, "\tgo test ./e2e/...", "\t@echo skipped"),
			want:    base,
			changed: []string{"target integration"},
		},
		{
			name:   "docs are not run by make",
			names:  []string{DefaultGoal},
			worker: replaceOnce(t, base, "mkdocs build", "mkdocs build --strict"),
			want:   replaceOnce(t, base, "mkdocs build", "mkdocs build --strict"),
		},
		{
			name:    "a new first target changes what bare make runs",
			names:   []string{DefaultGoal},
			worker:  "pass:\n\t@true\n\n" + base,
			want:    base,
			changed: []string{WholeFile},
		},
		{
			name:   "a new first target is fine when make names its target",
			names:  []string{"check"},
			worker: "pass:\n\t@true\n\n" + base,
			want:   "pass:\n\t@true\n\n" + base,
		},
	}
	for i := range cases {
		cases[i].file, cases[i].part, cases[i].base = "Makefile", "targets", base
	}
	runRestoreCases(t, cases)
}

func TestRestoreMakefileRecipePrefixAndDefine(t *testing.T) {
	base := `.RECIPEPREFIX = >
define RUN
go test ./...
endef
test:
> $(RUN)
`
	runRestoreCases(t, []restoreCase{
		{
			name: "recipe prefix and define block", file: "Makefile", part: "targets", names: []string{"test"}, base: base,
			worker:  strings.Replace(base, "go test ./...", "true", 1),
			want:    base,
			changed: []string{"variable RUN"},
		},
		{
			name: "a recipe line after a blank line is still the recipe", file: "Makefile", part: "targets", names: []string{"test"}, base: base,
			worker:  base + "\n> cp fake.xml report.xml\n",
			want:    base,
			changed: []string{"target test"},
		},
	})
	if _, _, err := Restore("Makefile", "targets", []byte(".RECIPEPREFIX = $(X)\n"), nil, []string{"test"}); err == nil {
		t.Error("want an error for a computed .RECIPEPREFIX at base")
	}
}

func TestTargetsRun(t *testing.T) {
	for _, c := range []struct {
		cmds []string
		want []string
	}{
		{[]string{"make test"}, []string{"test"}},
		{[]string{"make -C . check lint"}, []string{"check", "lint"}},
		{[]string{"make -j4 test", "make -j 8 build"}, []string{"build", "test"}},
		{[]string{"make"}, []string{DefaultGoal}},
		{[]string{"make -f other.mk V=1 -o stale all 2>&1 | tee log"}, []string{"all"}},
		{[]string{"cd sub && make test; gmake -k lint"}, []string{"lint", "test"}},
		{[]string{`bash -c "make unit"`, "timeout 60 make integration"}, []string{"integration", "unit"}},
		{[]string{"command -v go", "echo make test", "go test ./..."}, []string{}},
	} {
		got := TargetsRun(c.cmds)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("TargetsRun(%q) = %q, want %q", c.cmds, got, c.want)
		}
	}
}
