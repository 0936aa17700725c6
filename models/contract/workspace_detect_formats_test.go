package contract

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/formats/toml"
)

// pythonConfigured prints, for each file, [ruff, mypy]: whether the tool would
// find its configuration there, read with the reader the tool uses (tomllib for
// pyproject.toml: tool.ruff or tool.mypy is a table; configparser for setup.cfg,
// which ruff does not read: a [mypy] section), or ERROR.
const pythonConfigured = `
import configparser, json, sys, tomllib
def table(d, path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return isinstance(d, dict)
for p in sys.argv[1:]:
    try:
        if p.endswith(".toml"):
            with open(p, "rb") as f:
                d = tomllib.load(f)
            print(json.dumps([table(d, ["tool", "ruff"]), table(d, ["tool", "mypy"])]))
        else:
            c = configparser.ConfigParser(interpolation=None)
            c.read(p)
            print(json.dumps([False, "mypy" in c.sections()]))
    except Exception:
        print("ERROR")
`

// TestDetectConfiguredAgreesWithPython: which of ruff and mypy DetectWorkspace
// finds configured in a pyproject.toml or setup.cfg is what Python's tomllib and
// configparser read there; a comment or a string naming the table no longer
// counts, as the former substring checks had it.
func TestDetectConfiguredAgreesWithPython(t *testing.T) {
	if exec.Command("python3", "-c", "import tomllib, configparser").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 with tomllib is required in CI")
		}
		t.Skip("no python3 with tomllib")
	}
	cases := []struct{ file, text string }{
		{"pyproject.toml", "# [tool.ruff] comes later\n[project]\nname = \"x\"\n"},
		{"pyproject.toml", "[project]\ndescription = \"see [tool.mypy] and [tool.ruff]\"\n"},
		{"pyproject.toml", "[project]\nreadme = '''\n[tool.ruff]\n'''\n"},
		{"pyproject.toml", "[tool.ruff.lint]\nselect = [\"E\"]\n"},
		{"pyproject.toml", "[[tool.mypy.overrides]]\nmodule = \"x.*\"\n"},
		{"pyproject.toml", "[tool.ruff]\nline-length = 100\n[tool.mypy]\nstrict = true\n"},
		{"pyproject.toml", "[tool]\nruff.line-length = 100\n"},
		{"pyproject.toml", "[tool.ruffus]\n[tool.mypy-extras]\n"},
		{"setup.cfg", "# [mypy]\n[metadata]\nname = x\n"},
		{"setup.cfg", "[metadata]\ndescription = see [mypy]\n"},
		{"setup.cfg", "[mypy-x.*]\nignore_errors = True\n"},
		{"setup.cfg", "[metadata]\nname = x\n\n[mypy]\nstrict = True\n"},
	}
	tmp := t.TempDir()
	var files []string
	for i, c := range cases {
		p := filepath.Join(tmp, string(rune('a'+i))+filepath.Ext(c.file))
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err := exec.Command("python3", append([]string{"-c", pythonConfigured}, files...)...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python3 printed %q", out)
	}
	for i, c := range cases {
		var want [2]bool
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatalf("%s %q: python says %s", c.file, c.text, lines[i])
		}
		facts, err := DetectWorkspace(writeTree(t, map[string]string{c.file: c.text}), onPath())
		if err != nil {
			t.Fatal(err)
		}
		got := [2]bool{facts.Configured["ruff"] == c.file, facts.Configured["mypy"] == c.file}
		if got != want {
			t.Errorf("%s %q: configured [ruff mypy] = %v, python reads %v", c.file, c.text, got, want)
		}
	}
}

// TestConfigProbesAreWellFormed: every probe names one kind of check, and a
// table probe is a TOML key.
func TestConfigProbesAreWellFormed(t *testing.T) {
	for tool, probes := range ConfigTools {
		for _, p := range probes {
			set := 0
			for _, s := range []string{p.Contains, p.Table, p.Section} {
				if s != "" {
					set++
				}
			}
			if _, ok := toml.ParseKey(p.Table); set > 1 || (p.Table != "" && !ok) {
				t.Errorf("%s: probe %+v", tool, p)
			}
		}
	}
}
