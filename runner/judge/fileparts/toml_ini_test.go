package fileparts

import "testing"

const basePyproject = `[project]
name = "calc"
description = """
A calculator.
[tool.pytest.ini_options]
is not a table here.
"""
dependencies = [
    "requests>=2",  # [tool.pytest] in a comment
]

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.ruff]
line-length = 100
`

func TestRestorePyproject(t *testing.T) {
	withDep := replaceOnce(t, basePyproject, `    "requests>=2",`, `    "requests>=2",
    "numpy>=2",`)
	cases := []restoreCase{
		{
			name:    "addopts added to the pytest table, dependency added",
			worker:  replaceOnce(t, withDep, `testpaths = ["tests"]`, `testpaths = ["tests"]`+"\naddopts = \"-k nothing\""),
			want:    withDep,
			changed: []string{"[tool.pytest.ini_options]"},
		},
		{
			name:   "fair edit of [project] dependencies only",
			worker: withDep,
			want:   withDep,
		},
		{
			name:   "comments and spacing inside the pytest table are no change",
			worker: replaceOnce(t, withDep, `testpaths = ["tests"]`, "# where the tests are\ntestpaths   =   [\"tests\"]   # the suite"),
			want:   replaceOnce(t, withDep, `testpaths = ["tests"]`, "# where the tests are\ntestpaths   =   [\"tests\"]   # the suite"),
		},
		{
			name:    "a dotted key under [tool] smuggles pytest options",
			worker:  replaceOnce(t, withDep, "[tool.ruff]\n", "[tool]\npytest.ini_options.addopts = \"-k nothing\"\n\n[tool.ruff]\n"),
			want:    replaceOnce(t, withDep, "[tool.ruff]\n", "[tool]\n\n[tool.ruff]\n"),
			changed: []string{"tool.pytest.ini_options.addopts"},
		},
		{
			name:    "a top-level dotted key and an inline table smuggle them too",
			worker:  "tool.pytest.ini_options.addopts = '-k nothing'\n" + withDep,
			want:    withDep,
			changed: []string{"tool.pytest.ini_options.addopts"},
		},
		{
			name:    "quoted and spaced keys in a new header",
			worker:  withDep + "\n[ tool . \"pytest\" . 'ini_options' . \"x\" ]\naddopts = \"-p no:python\"\n",
			want:    withDep + "\n",
			changed: []string{"[tool.pytest.ini_options.x]"},
		},
		{
			name:    "the pytest table deleted is put back at the end",
			worker:  replaceOnce(t, withDep, "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n", ""),
			want:    replaceOnce(t, withDep, "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n", "") + "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n",
			changed: []string{"[tool.pytest.ini_options]"},
		},
		{
			name:   "multi-line strings and arrays do not hide or fake headers",
			worker: replaceOnce(t, withDep, "A calculator.", "A calculator.\n[tool.pytest.ini_options]\naddopts = 'not real'"),
			want:   replaceOnce(t, withDep, "A calculator.", "A calculator.\n[tool.pytest.ini_options]\naddopts = 'not real'"),
		},
	}
	for i := range cases {
		cases[i].file, cases[i].part, cases[i].base = "pyproject.toml", "[tool.pytest]", basePyproject
	}
	runRestoreCases(t, cases)

	runRestoreCases(t, []restoreCase{{
		name: "pytest table added where base had none", file: "pyproject.toml", part: "[tool.pytest]",
		base:    "[project]\nname = \"calc\"\n",
		worker:  "[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\naddopts = \"-k nothing\"\n[tool.black]\n",
		want:    "[project]\nname = \"calc\"\n\n[tool.black]\n",
		changed: []string{"[tool.pytest.ini_options]"},
	}, {
		name: "array of tables", file: "pyproject.toml", part: "[tool.pytest]",
		base:    "[[tool.pytest.x]]\na = 1\n",
		worker:  "[[tool.pytest.x]]\na = 1\n[[tool.pytest.x]]\na = 2\n",
		want:    "[[tool.pytest.x]]\na = 1\n",
		changed: []string{"[[tool.pytest.x]]"},
	}})
}

const baseSetupCfg = `[metadata]
name = calc

[tool:pytest]
testpaths = tests

[flake8]
max-line-length = 100
`

func TestRestoreSetupCfg(t *testing.T) {
	cases := []restoreCase{
		{
			name:    "addopts added",
			worker:  replaceOnce(t, baseSetupCfg, "testpaths = tests\n", "testpaths = tests\naddopts = -k nothing\n"),
			want:    baseSetupCfg,
			changed: []string{"[tool:pytest]"},
		},
		{
			name:   "a comment added and flake8 edited: no change",
			worker: replaceOnce(t, baseSetupCfg, "testpaths = tests\n", "# our tests\ntestpaths = tests   \n"),
			want:   replaceOnce(t, baseSetupCfg, "testpaths = tests\n", "# our tests\ntestpaths = tests   \n"),
		},
		{
			name:    "an indented header is a continuation line to pytest",
			worker:  replaceOnce(t, baseSetupCfg, "testpaths = tests\n", "testpaths = tests\n  [other]\naddopts = -k nothing\n"),
			want:    baseSetupCfg,
			changed: []string{"[tool:pytest]"},
		},
		{
			name:    "a header after a form feed or a lone CR is a header to pytest",
			worker:  replaceOnce(t, baseSetupCfg, "max-line-length = 100\n", "max-line-length = 100\f[tool:pytest]\raddopts = -k nothing\n"),
			want:    replaceOnce(t, baseSetupCfg, "max-line-length = 100\n", "max-line-length = 100\f"),
			changed: []string{"[tool:pytest]"},
		},
		{
			name:    "the section deleted is put back",
			worker:  "[metadata]\nname = calc\n",
			want:    "[metadata]\nname = calc\n[tool:pytest]\ntestpaths = tests\n\n",
			changed: []string{"[tool:pytest]"},
		},
	}
	for i := range cases {
		cases[i].file, cases[i].part, cases[i].base = "setup.cfg", "[tool:pytest]", baseSetupCfg
	}
	runRestoreCases(t, cases)
}

func TestCheckPart(t *testing.T) {
	for _, c := range []struct {
		file, part string
		ok         bool
	}{
		{"package.json", "scripts", true},
		{"web/package.json", ".jest", true},
		{"Makefile", "targets", true},
		{"pyproject.toml", "[tool.pytest]", true},
		{"pyproject.toml", "[tool:pytest]", false},
		{"setup.cfg", "[tool:pytest]", true},
		{"tox.ini", "[pytest]", true},
		{"setup.cfg", "[]", false},
		{"Makefile", "recipes", false},
	} {
		if err := CheckPart(c.file, c.part); (err == nil) != c.ok {
			t.Errorf("CheckPart(%q, %q) = %v", c.file, c.part, err)
		}
	}
}

func TestTooLarge(t *testing.T) {
	big := make([]byte, MaxFileBytes+1)
	if _, _, err := Restore("Makefile", "targets", big, nil, []string{"test"}); err != ErrTooLarge {
		t.Errorf("base too large: err = %v", err)
	}
	if _, _, err := Restore("package.json", "scripts", []byte("{}"), big, []string{"test"}); err != ErrTooLarge {
		t.Errorf("worker too large: err = %v", err)
	}
}
