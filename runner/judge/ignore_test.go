package judge

import (
	"bytes"
	"context"
	"math/rand"
	"path"
	"strings"
	"testing"
)

// ignoreCase is one generated layout: files and .gitignore files.
type ignoreCase map[string]string

var (
	genDirs     = []string{"", "a", "b", "a/c", "a/c/d", "b/build", "x[1]", "sp ace", "a/tmp", "lib/*star"}
	genNames    = []string{"x.o", "y.txt", "log", "keep.o", "build", "tmp", "README", "!bang", "#hash", "z.o ", "c"}
	genPatterns = []string{"*.o", "!keep.o", "/log", "build/", "c/", "**/tmp", "a/**/y.txt", "!c", "x*", "# comment", "",
		"y.txt ", `\!bang`, `\#hash`, "[xy].txt", "*/log", "d/", "/c", "!/c", "tmp/", "!tmp/", "!*.txt", "README/",
		"c/y.txt", "*", "!*/", "**/d/**", `z.o\ `, "!x.o"}
)

// genIgnoreCase makes a layout from seed: a few files in each directory, and
// .gitignore files with patterns drawn from the list above in some directories.
func genIgnoreCase(seed int64) ignoreCase {
	r := rand.New(rand.NewSource(seed))
	c := ignoreCase{}
	for _, d := range genDirs {
		for _, n := range genNames {
			if r.Intn(3) == 0 {
				c[path.Join(d, n)] = "content of " + path.Join(d, n) + "\n"
			}
		}
		if r.Intn(2) == 0 {
			var lines []string
			for i := r.Intn(5); i >= 0; i-- {
				lines = append(lines, genPatterns[r.Intn(len(genPatterns))])
			}
			c[path.Join(d, ".gitignore")] = strings.Join(lines, "\n") + "\n"
		}
	}
	// A file and a directory cannot share a name.
	for p := range c {
		for q := range c {
			if strings.HasPrefix(q, p+"/") {
				delete(c, p)
			}
		}
	}
	return c
}

// TestIgnoreMatchesGit is the property test of the base rules: for generated layouts,
// the snapshot of an untouched checkout equals `git add -A` + write-tree of a copy in
// a plain repository — both with the .gitignore files read per directory by git
// (IgnoreFrom "", the base) and translated from a commit (IgnoreFrom set, every
// candidate after it).
func TestIgnoreMatchesGit(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		layout := genIgnoreCase(seed)
		dir := t.TempDir()
		snapPut(t, dir, layout)
		sgit(t, dir, "init", "-q")
		sgit(t, dir, "add", "-A")
		want := sgit(t, dir, "write-tree")

		work := t.TempDir()
		snapPut(t, work, layout)
		base, err := s.Snapshot(ctx, SnapshotRequest{Dir: work})
		if err != nil {
			t.Fatal(err)
		}
		if base.Tree != want {
			t.Fatalf("seed %d: per-directory snapshot differs from git add -A:\n%s", seed, snapTreeDiff(t, s, dir, want, base.Tree))
		}
		cand, err := s.Snapshot(ctx, SnapshotRequest{Dir: work, IgnoreFrom: base.Commit})
		if err != nil {
			t.Fatal(err)
		}
		if cand.Tree != want {
			rules, _ := s.ignoreRules(ctx, base.Commit)
			t.Fatalf("seed %d: translated rules differ from git add -A:\n%s\nrules:\n%s", seed, snapTreeDiff(t, s, dir, want, cand.Tree), rules)
		}
	}
}

// snapTreeDiff names the paths of two trees (want in the plain repository at dir, got in
// the store) that only one holds.
func snapTreeDiff(t *testing.T, s *Store, dir, want, got string) string {
	wantPaths := strings.Split(sgit(t, dir, "ls-tree", "-r", "--name-only", want), "\n")
	gotOut, err := s.git(context.Background(), gitCmd{args: []string{"ls-tree", "-r", "--name-only", got}})
	if err != nil {
		t.Fatal(err)
	}
	gotPaths := strings.Split(strings.TrimSpace(string(gotOut)), "\n")
	in := map[string]int{}
	for _, p := range wantPaths {
		in[p] |= 1
	}
	for _, p := range gotPaths {
		in[p] |= 2
	}
	var b strings.Builder
	for p, v := range in {
		switch v {
		case 1:
			b.WriteString("only git add -A: " + p + "\n")
		case 2:
			b.WriteString("only the snapshot: " + p + "\n")
		}
	}
	return b.String()
}

// TestTranslatePattern pins the translation of single patterns.
func TestTranslatePattern(t *testing.T) {
	for _, tc := range []struct{ dir, in, want string }{
		{"", "*.o", "*.o"},
		{"d", "*.o", "/d/**/*.o"},
		{"d", "!keep", "!/d/**/keep"},
		{"d", "build/", "/d/**/build/"},
		{"d", "/log", "/d/log"},
		{"d", "a/b", "/d/a/b"},
		{"d", "!a/b/", "!/d/a/b/"},
		{"d/e", "**/x", "/d/e/**/x"},
		{"x[1]", "y", `/x\[1]/**/y`},
		{"d", "# c", ""},
		{"d", "   ", ""},
		{"d", `a\ `, `/d/**/a\ `},
		{"d", "a  ", "/d/**/a"},
		{"d", "/", ""},
	} {
		if got := translatePattern(tc.dir, tc.in); got != tc.want {
			t.Errorf("translatePattern(%q, %q) = %q, want %q", tc.dir, tc.in, got, tc.want)
		}
	}
	var b bytes.Buffer
	if err := translateIgnore(&b, "a\nb", []byte("x\n")); err == nil {
		t.Error("a directory name with a line break was translated")
	}
}
