package ini

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sectionCases are setup.cfg texts on which a substring check for "[mypy" (the
// contract code's former reader) and Python's readers disagree, and a few where
// they agree.
var sectionCases = []string{
	"# [mypy]\n[metadata]\nname = x\n",
	"; [mypy] later\n[metadata]\nname = x\n",
	"[metadata]\ndescription = see [mypy] below\n",
	"[metadata]\ndescription = first line\n  [mypy]\n",
	"[mypy]\nstrict = True\n",
	"[mypy-foo.*]\nignore_errors = True\n",
	"[mypyc]\nx = 1\n",
	"[mypy] ; the checker\nstrict = True\n",
	"[metadata]\r\nname = x\r\n[mypy]\r\nstrict = True\r\n",
	"[ mypy ]\nstrict = True\n",
}

// iniconfigOnly are cases in the gap (see the package comment): configparser ends
// lines only at \n, \r\n and \r, so it reads no header after a form feed.
var iniconfigOnly = []string{
	"[metadata]\nname = x\n\f[mypy]\n",
}

// sectionNames are the sections asked about in each case.
var sectionNames = []string{"mypy", "metadata"}

// pythonSections prints, for each file, the sections configparser (always) and
// iniconfig (null when it is not installed) read, or ERROR.
const pythonSections = `
import configparser, json, sys
try:
    import iniconfig
except ImportError:
    iniconfig = None
for p in sys.argv[1:]:
    text = open(p, newline="").read()
    out = []
    try:
        c = configparser.ConfigParser(interpolation=None)
        c.read_string(text)
        out.append(c.sections())
    except Exception:
        out.append("ERROR")
    try:
        out.append(list(iniconfig.IniConfig(p, data=text).sections) if iniconfig else None)
    except Exception:
        out.append("ERROR")
    print(json.dumps(out))
`

// python3For finds a python3 that can import mod: the one on PATH, or Debian's
// (which holds python3-iniconfig, pytest's dependency, when a pyenv shadows it).
func python3For(mod string) string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import "+mod).Run() == nil {
			return py
		}
	}
	return ""
}

// TestHasSectionAgreesWithPython asks configparser (what mypy, setuptools and tox
// read setup.cfg and tox.ini with) and iniconfig (what pytest reads them with)
// which sections each case has, and HasSection the same.
func TestHasSectionAgreesWithPython(t *testing.T) {
	py := python3For("iniconfig")
	if py == "" {
		py = python3For("configparser")
	}
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3")
	}
	dir := t.TempDir()
	args := []string{"-c", pythonSections}
	cases := append(append([]string{}, sectionCases...), iniconfigOnly...)
	for i, c := range cases {
		p := filepath.Join(dir, string(rune('a'+i))+".cfg")
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%s printed %q", py, out)
	}
	for i, c := range cases {
		var readers [2]any // configparser's sections, iniconfig's
		if err := json.Unmarshal([]byte(lines[i]), &readers); err != nil {
			t.Fatalf("%q: python says %s", c, lines[i])
		}
		var got []string
		for _, s := range Sections([]byte(c)) {
			got = append(got, s.Name)
		}
		for r, name := range []string{"configparser", "iniconfig"} {
			if readers[r] == nil || (r == 0 && i >= len(sectionCases)) {
				t.Logf("%q: %s not compared", c, name)
				continue
			}
			want := readers[r].([]any)
			for _, sec := range sectionNames {
				if has := HasSection([]byte(c), sec); has != containsAny(want, sec) {
					t.Errorf("%q: HasSection(%q) = %v, %s reads sections %q (Sections: %q)", c, sec, has, name, want, got)
				}
			}
		}
	}
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSectionSpans: a section runs from its header to the next, and lines end at
// Python's boundaries.
func TestSectionSpans(t *testing.T) {
	doc := "x = 0\n[a]\nk = 1\r\n  [b]\n[c] # c\fk = 2"
	var got []string
	for _, s := range Sections([]byte(doc)) {
		got = append(got, s.Name+"@"+doc[s.Start:s.HeaderEnd]+"|"+doc[s.HeaderEnd:s.End])
	}
	want := []string{"a@[a]\n|k = 1\r\n  [b]\n", "c@[c] # c\f|k = 2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sections:\n got %q\nwant %q", got, want)
	}
}
