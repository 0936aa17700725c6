package toml

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"tool.pytest", []string{"tool", "pytest"}, true},
		{` tool . "py\u0074est" `, []string{"tool", "pytest"}, true},
		{"'a.b'.c", []string{"a.b", "c"}, true},
		{"tool:pytest", nil, false},
		{"a..b", nil, false},
	} {
		got, ok := ParseKey(c.in)
		if ok != c.ok || (ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("ParseKey(%q) = %q, %v", c.in, got, ok)
		}
	}
}

// tableCases are pyproject.toml texts on which a substring check for
// "[tool.ruff" (the contract code's former reader) and tomllib disagree, and a few
// where they agree.
var tableCases = []string{
	"# [tool.ruff] is not used here\n[project]\nname = \"x\"\n",
	"[project]\ndescription = \"configure [tool.ruff] later\"\n",
	"[project]\nreadme = \"\"\"\n[tool.ruff]\nline-length = 100\n\"\"\"\n",
	"[tool.ruff.lint]\nselect = [\"E\"]\n",
	"[[tool.ruff]]\nline-length = 100\n",
	"[[tool.mypy.overrides]]\nmodule = \"x.*\"\n",
	"[tool.ruff]\nline-length = 100\n",
	"[tool]\nruff.line-length = 100\n",
	"tool = {ruff = {line-length = 100}}\n",
	"tool = {ruff.lint = {select = [\"E\"]}, mypy = 1}\n",
	"[tool.ruffus]\nx = 1\n",
	"[ tool . \"ruff\" ]\nx = 1\n",
	"[tool]\nruff = 1\nmypy = [{strict = true}]\n",
	"x = [\n  \"[tool.ruff]\", # [tool.mypy]\n]\n[tool . 'mypy']\n",
}

// tablePaths are the tables asked about in each case.
var tablePaths = [][]string{{"tool", "ruff"}, {"tool", "mypy"}, {"tool"}, {"project"}}

// requirePython3 finds a python3 that can import mod; missing, the test skips,
// unless CI=true, where it fails.
func requirePython3(t *testing.T, mod string) {
	t.Helper()
	if err := exec.Command("python3", "-c", "import "+mod).Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with %s is required in CI: %v", mod, err)
		}
		t.Skipf("no python3 with %s: %v", mod, err)
	}
}

// tomllibTables prints, for each file, whether each path of argv[1] (JSON) is a
// table (a dict) in what tomllib reads, or ERROR.
const tomllibTables = `
import json, sys, tomllib
paths = json.loads(sys.argv[1])
def table(d, path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return isinstance(d, dict)
for p in sys.argv[2:]:
    try:
        with open(p, "rb") as f:
            d = tomllib.load(f)
        print(json.dumps([table(d, path) for path in paths]))
    except Exception as e:
        print("ERROR")
`

// TestHasTableAgreesWithTomllib asks Python's tomllib which tables each case holds
// and HasTable the same.
func TestHasTableAgreesWithTomllib(t *testing.T) {
	requirePython3(t, "tomllib")
	dir := t.TempDir()
	args := []string{"-c", tomllibTables, mustJSON(t, tablePaths)}
	for i, c := range tableCases {
		p := filepath.Join(dir, string(rune('a'+i))+".toml")
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command("python3", args...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(tableCases) {
		t.Fatalf("python3 printed %q", out)
	}
	for i, c := range tableCases {
		var want []bool
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatalf("%q: tomllib says %s", c, lines[i])
		}
		var got []bool
		for _, path := range tablePaths {
			got = append(got, HasTable([]byte(c), path...))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: HasTable of %q = %v, tomllib reads %v", c, tablePaths, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScanStatements: a header inside a multi-line string or an array is part of
// the pair that holds it, and a comment is a blank statement.
func TestScanStatements(t *testing.T) {
	doc := "# [a]\nx = \"\"\"\n[b]\n\"\"\"\ny = [\n  1, # [c]\n]\n[[d . 'e']]\n!\n"
	var got []string
	for _, st := range Scan([]byte(doc)) {
		got = append(got, strings.Join(st.Key, "/")+"@"+doc[st.Start:st.End])
	}
	want := []string{"@# [a]\n", "x@x = \"\"\"\n[b]\n\"\"\"\n", "y@y = [\n  1, # [c]\n]\n", "d/e@[[d . 'e']]\n", "@!\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan:\n got %q\nwant %q", got, want)
	}
}
