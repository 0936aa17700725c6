package judge

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

var goRules = ParseRules([]string{"*_test.go", "testdata/**"})

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, rel string
		want      bool
	}{
		{"*_test.go", "calc_test.go", true},
		{"*_test.go", "pkg/deep/calc_test.go", true},
		{"*_test.go", "calc.go", false},
		{"testdata/**", "testdata/a/b.txt", true},
		{"testdata/**", "testdata", false},
		{"testdata/**", "pkg/testdata/x", false},
		{"**/*.test.*", "src/a.test.js", true},
		{"**/*.test.*", "a.test.js", true},
		{"tests/**", "tests/test_x.py", true},
		{".mocharc*", ".mocharc.yml", true},
	} {
		if got := (Rule{Glob: tc.glob}).Match(tc.rel); got != tc.want {
			t.Errorf("%s matches %s: %v, want %v", tc.glob, tc.rel, got, tc.want)
		}
	}
}
