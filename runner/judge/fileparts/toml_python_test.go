package fileparts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tomllibRead prints, for each file, what Python's tomllib reads as tool.pytest
// and project.dependencies (or ERROR).
const tomllibRead = `
import json, sys, tomllib
for p in sys.argv[1:]:
    try:
        with open(p, "rb") as f:
            d = tomllib.load(f)
        print(json.dumps([d.get("tool", {}).get("pytest"), d.get("project", {}).get("dependencies")], sort_keys=True))
    except Exception as e:
        print("ERROR")
`

func TestRestorePyprojectAgainstTomllib(t *testing.T) {
	if exec.Command("python3", "-c", "import tomllib").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no python3 with tomllib: the comparison with the real reader must run")
		}
		t.Skip("no python3 with tomllib")
	}
	const dep = `    "requests>=2",`
	attacks := []struct{ name, worker string }{
		{"addopts in the table", strings.Replace(basePyproject, `testpaths = ["tests"]`, `testpaths = ["tests"]`+"\naddopts = \"-k nothing\"", 1)},
		{"dotted key under [tool]", strings.Replace(basePyproject, "[tool.ruff]\n", "[tool]\npytest.ini_options.addopts = \"-k nothing\"\n[tool.ruff]\n", 1)},
		{"dotted key at top level", "tool.pytest.ini_options.addopts = '-k nothing'\n" + basePyproject},
		{"quoted, escaped, spaced keys", strings.Replace(basePyproject, "\n\n[tool.pytest.ini_options]\n", "\n\n"+`[ tool . "pyt\u0065st" . 'ini_options' ]`+"\naddopts = \"-k nothing\"\n", 1)},
		{"inert: header text inside a multi-line string", strings.Replace(basePyproject, "A calculator.\n[tool.pytest.ini_options]", "A calculator.\n[tool.pytest.ini_options]\naddopts = \"-k nothing\"", 1)},
		{"table moved after a multi-line array", strings.Replace(basePyproject, "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n", "", 1) +
			"x = [\n  \"\"\"\n[not.a.table]\n\"\"\",\n]\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\naddopts = \"-x\"\n"},
		{"CRLF line endings", strings.ReplaceAll(strings.Replace(basePyproject, `testpaths = ["tests"]`, `testpaths = ["nothing"]`, 1), "\n", "\r\n")},
		{"sub-table added", basePyproject + "[tool.pytest.ini_options.extra]\nx = 1\n"},
		{"table deleted", strings.Replace(basePyproject, "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n", "", 1)},
		{"fair: dependency added", strings.Replace(basePyproject, dep, dep+"\n    \"numpy>=2\",", 1)},
	}
	dir := t.TempDir()
	var files []string
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	write("base.toml", basePyproject)
	for i, a := range attacks {
		judged, changed, err := Restore("pyproject.toml", "[tool.pytest]", []byte(basePyproject), []byte(a.worker), nil)
		if err != nil {
			t.Fatal(err)
		}
		if harmless := strings.HasPrefix(a.name, "fair") || strings.HasPrefix(a.name, "inert"); harmless != (len(changed) == 0) {
			t.Errorf("%s: changed %q", a.name, changed)
		}
		write(filepath.Base(dir)+string(rune('a'+i))+".toml", string(judged))
		write(filepath.Base(dir)+string(rune('a'+i))+".worker.toml", a.worker)
	}
	out, err := exec.Command("python3", append([]string{"-c", tomllibRead}, files...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1+2*len(attacks) {
		t.Fatalf("python printed %q", out)
	}
	baseRead := lines[0]
	basePytest := baseRead[:strings.LastIndex(baseRead, ", [")]
	for i, a := range attacks {
		judged, worker := lines[1+2*i], lines[2+2*i]
		if judged == "ERROR" || !strings.HasPrefix(judged, basePytest+", ") {
			t.Errorf("%s: tomllib reads the judged file as %s, base as %s", a.name, judged, baseRead)
		}
		if (strings.HasPrefix(a.name, "fair") || strings.HasPrefix(a.name, "inert")) && judged != worker {
			t.Errorf("%s: judged %s, worker %s", a.name, judged, worker)
		}
	}
}
