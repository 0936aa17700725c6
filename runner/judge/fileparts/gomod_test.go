package fileparts

import (
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

const baseGoMod = `module example.com/calc

go 1.22

// the assertions the tests use
require github.com/stretchr/testify v1.9.0

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
`

// TestGoModReplaceRestored: a worker's replace that swaps testify for a local fake
// is removed, in whichever form it is written (a single line, a block, after the
// worker's fair edits elsewhere); the worker's other lines stay; the judged go.mod
// reads, with the go command's parser, exactly the base's replace lines.
func TestGoModReplaceRestored(t *testing.T) {
	for name, worker := range map[string]string{
		"line":  baseGoMod + "\nreplace github.com/stretchr/testify => ./fake\n",
		"block": baseGoMod + "\nreplace (\n\tgithub.com/stretchr/testify v1.9.0 => ./fake\n)\n",
		"first": "replace github.com/stretchr/testify => ../fake\n" + baseGoMod,
		"with a fair edit": strings.Replace(baseGoMod, "gopkg.in/yaml.v3 v3.0.1 // indirect",
			"gopkg.in/yaml.v3 v3.0.1 // indirect\n\tgolang.org/x/text v0.14.0", 1) + "replace github.com/stretchr/testify => ./fake\n",
	} {
		judged, changed, err := Restore("go.mod", "replace", []byte(baseGoMod), []byte(worker), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(string(judged), "fake") || strings.Join(changed, ",") != "replace github.com/stretchr/testify" {
			t.Fatalf("%s: judged %q, changed %v", name, judged, changed)
		}
		f, err := modfile.Parse("go.mod", judged, nil)
		if err != nil || len(f.Replace) != 0 || f.Module.Mod.Path != "example.com/calc" {
			t.Fatalf("%s: judged go.mod does not read as the base's replaces: %v\n%s", name, err, judged)
		}
		if name == "with a fair edit" && !strings.Contains(string(judged), "golang.org/x/text v0.14.0") {
			t.Fatalf("the worker's fair require was lost:\n%s", judged)
		}
	}
}

// TestGoModBaseReplaceKept: a replace at base is put back when the worker deletes or
// re-points it; a worker that only reformats it (a block instead of a line) changes
// nothing and its bytes are kept.
func TestGoModBaseReplaceKept(t *testing.T) {
	base := baseGoMod + "replace github.com/stretchr/testify => github.com/team/testify v1.9.1\n"
	for name, worker := range map[string]string{
		"deleted":    baseGoMod,
		"re-pointed": baseGoMod + "replace github.com/stretchr/testify => ./fake\n",
	} {
		judged, changed, err := Restore("go.mod", "replace", []byte(base), []byte(worker), nil)
		if err != nil || len(changed) == 0 {
			t.Fatalf("%s: %v %v", name, changed, err)
		}
		f, err := modfile.Parse("go.mod", judged, nil)
		if err != nil || len(f.Replace) != 1 || f.Replace[0].New.Path != "github.com/team/testify" {
			t.Fatalf("%s: judged\n%s", name, judged)
		}
	}
	block := baseGoMod + "replace (\n\tgithub.com/stretchr/testify => github.com/team/testify v1.9.1 // ours\n)\n"
	judged, changed, err := Restore("go.mod", "replace", []byte(base), []byte(block), nil)
	if err != nil || changed != nil || string(judged) != block {
		t.Fatalf("a reformatted replace counted as a change: %v %v\n%s", changed, err, judged)
	}
}

// TestGoModRequireAndToolchain: the require part pins versions (a worker's bump and
// its new module are taken out, the base's versions put back); the go and toolchain
// parts pin the compiler; an unreadable or deleted go.mod is the base's whole file.
func TestGoModRequireAndToolchain(t *testing.T) {
	worker := strings.Replace(baseGoMod, "testify v1.9.0", "testify v1.8.0", 1) + "require example.com/evil v0.0.1\n"
	judged, changed, err := Restore("go.mod", "require", []byte(baseGoMod), []byte(worker), nil)
	if err != nil || strings.Join(changed, ",") != "require example.com/evil,require github.com/stretchr/testify" {
		t.Fatalf("require: %v %v", changed, err)
	}
	f, _ := modfile.Parse("go.mod", judged, nil)
	if len(f.Require) != 3 || strings.Contains(string(judged), "evil") || !strings.Contains(string(judged), "testify v1.9.0") {
		t.Fatalf("require judged:\n%s", judged)
	}
	tc := strings.Replace(baseGoMod, "go 1.22", "go 1.22\n\ntoolchain go1.99.0", 1)
	judged, changed, _ = Restore("go.mod", "toolchain", []byte(baseGoMod), []byte(tc), nil)
	if strings.Contains(string(judged), "toolchain") || strings.Join(changed, ",") != "toolchain" {
		t.Fatalf("toolchain: %v\n%s", changed, judged)
	}
	judged, changed, _ = Restore("go.mod", "replace", []byte(baseGoMod), []byte("module (\n"), nil)
	if string(judged) != baseGoMod || !strings.Contains(strings.Join(changed, ","), WholeFile) {
		t.Fatalf("unreadable worker go.mod: %v\n%s", changed, judged)
	}
	judged, changed, _ = Restore("go.mod", "require", []byte(baseGoMod), nil, nil)
	if string(judged) != baseGoMod || !strings.Contains(strings.Join(changed, ","), WholeFile) {
		t.Fatalf("deleted go.mod: %v", changed)
	}
	if err := CheckPart("package.json", "replace"); err == nil {
		t.Fatal("a go.mod directive part accepted for package.json")
	}
}

// TestGoModNoBase: a go.mod the worker adds where there was none keeps no protected
// directive (a nested module's replace, say).
func TestGoModNoBase(t *testing.T) {
	judged, changed, err := Restore("sub/go.mod", "replace", nil, []byte("module x\n\nreplace a.b/c => ./c\n"), nil)
	if err != nil || strings.Contains(string(judged), "replace") || strings.Join(changed, ",") != "replace a.b/c" {
		t.Fatalf("%v %v\n%s", changed, err, judged)
	}
}
