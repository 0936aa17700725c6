package fileparts

import (
	"bytes"
	"slices"
	"testing"
)

// fuzzParts are the parts FuzzRestore picks from by its first argument.
var fuzzParts = []struct {
	file, part string
	names      []string
}{
	{"package.json", "scripts", []string{"test", "pretest", "posttest", "lint:*"}},
	{"package.json", ".jest", nil},
	{"Makefile", "targets", []string{"test", DefaultGoal}},
	{"pyproject.toml", "[tool.pytest]", nil},
	{"setup.cfg", "[tool:pytest]", nil},
	{"go.mod", "replace", nil},
}

func FuzzRestore(f *testing.F) {
	seeds := [][2]string{
		{basePackageJSON, `{"scripts": {"test": "exit 0", "pretest": "x"}, "scripts": {}}`},
		{`{"jest": {"a": 1}}`, `{"jest": [], "jest": {"a": 1}, "x": 1}`},
		{baseMakefile, baseMakefile + "ifeq (0,1)\nX = 1\nendif\n\texit 0\n%: ; @true\nT = test\n$(T): ; true\n"},
		{"all: test\ntest:\n\tgo test\n", "define X\nendef\n.RECIPEPREFIX = >\nx:\n> y\n\\\n"},
		{basePyproject, "[tool]\npytest.ini_options.a = 1\ntool = {pytest = 1}\n[[tool.pytest.x]]\ns = '''\n[x]\n'''\n"},
		{baseSetupCfg, "[tool:pytest]\r[x]\f  [y]\n[tool:pytest] ; c\n"},
		{baseGoMod + "replace a.b/c => ./c\n", baseGoMod + "replace (\n\ta.b/c v1.0.0 => ../d // x\n)\n"},
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s[0]), []byte(s[1]))
		f.Add(uint8(i), []byte(s[1]), []byte(s[0]))
	}
	f.Fuzz(func(t *testing.T, which uint8, base, worker []byte) {
		p := fuzzParts[int(which)%len(fuzzParts)]
		// Restore(base, base) changes nothing.
		same, ch, err := restore(p.file, p.part, base, base, p.names)
		if err == nil && (len(ch) != 0 || !bytes.Equal(same, base)) {
			t.Fatalf("Restore(base, base): changed %q, judged %q", ch, same)
		}
		judged, changed, err := restore(p.file, p.part, base, worker, p.names)
		if err != nil {
			return
		}
		if (len(changed) == 0) != bytes.Equal(judged, worker) {
			t.Fatalf("changed %q, but judged == worker is %v", changed, bytes.Equal(judged, worker))
		}
		if !slices.IsSorted(changed) {
			t.Fatalf("changed not sorted: %q", changed)
		}
		if judged == nil {
			return
		}
		// Judging the judged file again changes nothing.
		again, ch2, err := restore(p.file, p.part, base, judged, p.names)
		if err != nil || len(ch2) != 0 || !bytes.Equal(again, judged) {
			t.Fatalf("second Restore: err %v, changed %q\nfirst:  %q\nsecond: %q", err, ch2, judged, again)
		}
	})
}
