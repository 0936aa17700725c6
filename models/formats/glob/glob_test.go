package glob

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files is a workspace on which Match and MatchPath are compared with git's glob
// pathspecs (`git ls-files ':(glob)PATTERN'`).
var files = []string{
	"a.txt", ".hidden.txt", "test", "tent", "te/t", "lint:js", "lint:js:fix", "ab", "a[b]",
	"dir/a.txt", "dir/sub/a.txt", "dir/sub/b.go", "tests/x_test.go", "tests/deep/y_test.go",
}

// TestMatchAgreesWithGit: a pattern without a slash read by Match against every
// top-level name, and every pattern read by MatchPath against every path, select
// what git's glob pathspec selects (for MatchPath, a slash-less pattern is git's
// "**/PATTERN": a base name at any depth).
func TestMatchAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	for _, pat := range []string{"*.txt", "te?t", "t[ae]st", "te*", "lint:*", "*", "a\\[b]", "[^a]*",
		"dir/*.txt", "dir/**", "**/a.txt", "dir/**/a.txt", "tests/**/*_test.go", "*/sub/*"} {
		var gotPath, gotName []string
		for _, f := range files {
			if MatchPath(pat, f) {
				gotPath = append(gotPath, f)
			}
			if !strings.Contains(f, "/") && Match(pat, f) {
				gotName = append(gotName, f)
			}
		}
		gitPat := pat
		if !strings.Contains(pat, "/") {
			gitPat = "**/" + pat
			var top []string
			for _, f := range strings.Fields(git(t, dir, "ls-files", "-z", "--", ":(glob)"+pat)) {
				if !strings.Contains(f, "/") {
					top = append(top, f)
				}
			}
			if !sameSet(gotName, top) {
				t.Errorf("Match(%q) selects %q, git's top-level glob %q", pat, gotName, top)
			}
		}
		want := strings.Fields(git(t, dir, "ls-files", "-z", "--", ":(glob)"+gitPat))
		if !sameSet(gotPath, want) {
			t.Errorf("MatchPath(%q) selects %q, git ':(glob)%s' selects %q", pat, gotPath, gitPat, want)
		}
	}
}

// git runs git in dir; -z output has its NULs turned into newlines.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %q: %v", args, err)
	}
	return strings.ReplaceAll(string(out), "\x00", "\n")
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// taskCases are npm-run-all task patterns and script names, among them those on
// which the judge's former matcher ('*' crossing everything) and the contract
// code's (path.Match) disagreed.
var taskCases = [][2]string{
	{"lint:*", "lint:js"}, {"lint:*", "lint"}, {"lint:*", "lint:js:fix"}, {"lint:**", "lint:js:fix"},
	{"lint:**", "lint"}, {"*", "x"}, {"a*b*c", "aXbYc"}, {"a*b*c", "aXc"}, {"test", "test"},
	{"build*", "build/web"}, {"te?t", "test"}, {"te?t", "te:t"}, {"t[ae]st", "tast"},
	{"lint:*", "lint:.hidden"}, {"lint:.*", "lint:.hidden"}, {"**", "a:b"}, {"test:**:unit", "test:unit"},
	{"lint:[", "lint:["}, {"a\\*", "a*"},
}

// TestMatchTaskAgreesWithMinimatch compares MatchTask with npm-run-all's own
// reading: minimatch (npm's bundled copy) on the names with ':' and '/' swapped.
func TestMatchTaskAgreesWithMinimatch(t *testing.T) {
	const minimatch = "/usr/lib/node_modules/npm/node_modules/minimatch"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(minimatch); err != nil {
		t.Skip("npm's minimatch not found")
	}
	in, _ := json.Marshal(taskCases)
	script := `const {minimatch} = require(process.argv[1]);
const swap = s => s.replace(/[:\/]/g, c => c === "/" ? ":" : "/");
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify(cases.map(([p, n]) => minimatch(swap(n), swap(p), {nonegate: true}))));`
	out, err := exec.Command("node", "-e", script, minimatch, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []bool
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(taskCases) {
		t.Fatalf("node said %s (%v)", out, err)
	}
	for i, c := range taskCases {
		if got := MatchTask(c[0], c[1]); got != want[i] {
			t.Errorf("MatchTask(%q, %q) = %v, npm-run-all's minimatch says %v", c[0], c[1], got, want[i])
		}
	}
}
