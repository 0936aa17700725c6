package models

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextDiffEqualIsEmpty(t *testing.T) {
	for _, s := range []string{"", "a", "a\nb\n"} {
		if d := TextDiff(s, s, 0); d != "" {
			t.Fatalf("TextDiff(%q, same) = %q", s, d)
		}
	}
	if d := TextDiff("a\nb", "a\nb\n", 0); d != "" {
		t.Fatalf("a final newline is not a changed line: %q", d)
	}
}

func TestTextDiffHunks(t *testing.T) {
	before := "activities:\n  lint: gofmt -l .\n  unit-test: go test ./...\n  vet: go vet ./...\nalways:\n  - unit-test\n"
	after := "activities:\n  lint: gofmt -l .\n  unit-test: go test -race ./...\n  vet: go vet ./...\nalways:\n  - unit-test\n  - vet\n"
	want := `@@ -1,6 +1,7 @@
 activities:
   lint: gofmt -l .
-  unit-test: go test ./...
+  unit-test: go test -race ./...
   vet: go vet ./...
 always:
   - unit-test
+  - vet
`
	if got := TextDiff(before, after, 0); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTextDiffSeparateHunksAndEmptySides(t *testing.T) {
	var a []string
	for i := 1; i <= 20; i++ {
		a = append(a, "line "+strconv.Itoa(i))
	}
	b := append([]string{"new first"}, a...)
	b[20] = "changed 20" // a's line 20
	got := TextDiff(strings.Join(a, "\n"), strings.Join(b, "\n"), 0)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if lines[0] != "@@ -1,3 +1,4 @@" || lines[1] != "+new first" {
		t.Fatalf("first hunk:\n%s", got)
	}
	if !strings.Contains(got, "@@ -17,4 +18,4 @@\n line 17\n line 18\n line 19\n-line 20\n+changed 20\n") {
		t.Fatalf("second hunk:\n%s", got)
	}
	if d := TextDiff("", "x\ny\n", 0); d != "@@ -0,0 +1,2 @@\n+x\n+y\n" {
		t.Fatalf("from nothing: %q", d)
	}
	if d := TextDiff("x\ny\n", "", 0); d != "@@ -1,2 +0,0 @@\n-x\n-y\n" {
		t.Fatalf("to nothing: %q", d)
	}
}

// TestTextDiffAppliesAndIsShortest checks on random texts that applying the diff to
// before gives after, and that it changes as few lines as a longest common
// subsequence allows.
func TestTextDiffAppliesAndIsShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		a := randomLines(r, r.IntN(30))
		b := mutateLines(r, a)
		d := TextDiff(strings.Join(a, "\n"), strings.Join(b, "\n"), 1<<20)
		got, changed := applyDiff(t, a, d)
		if strings.Join(got, "\n") != strings.Join(b, "\n") {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d, a, got, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changed != want {
			t.Fatalf("case %d: %d lines changed, shortest is %d:\n%s", i, changed, want, d)
		}
	}
}

// TestTextDiffLargeChangeFallsBack: past maxDiffEdits the middle is replaced
// wholesale, and the diff still applies.
func TestTextDiffLargeChangeFallsBack(t *testing.T) {
	var a, b []string
	for i := 0; i < 2*maxDiffEdits; i++ {
		a = append(a, fmt.Sprintf("old %d", i))
		b = append(b, fmt.Sprintf("new %d", i))
	}
	a = append([]string{"head"}, append(a, "tail")...)
	b = append([]string{"head"}, append(b, "tail")...)
	d := TextDiff(strings.Join(a, "\n"), strings.Join(b, "\n"), 1<<30)
	got, changed := applyDiff(t, a, d)
	if strings.Join(got, "\n") != strings.Join(b, "\n") || changed != 4*maxDiffEdits {
		t.Fatalf("fallback diff does not apply (%d changed)", changed)
	}
}

func TestTextDiffIsBounded(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&a, "step %d: go test ./...\n", i)
		fmt.Fprintf(&b, "step %d: go test -race ./...\n", i)
	}
	d := TextDiff(a.String(), b.String(), 0)
	if len(d) > DiffLimit {
		t.Fatalf("diff is %d bytes, limit %d", len(d), DiffLimit)
	}
	if !strings.HasSuffix(d, " more lines not shown\n") || !strings.HasPrefix(d, "@@ ") {
		t.Fatalf("no truncation note:\n%s", d[max(0, len(d)-200):])
	}
	long := strings.Repeat("é", 10000)
	d = TextDiff("", long, 200)
	if len(d) > 200 || !utf8.ValidString(d) || !strings.HasSuffix(d, "… diff truncated\n") {
		t.Fatalf("one long line: %d bytes %q", len(d), d)
	}
	d = TextDiff("", long+"\nmore\n", 200)
	if len(d) > 200 || !strings.HasSuffix(d, "… diff truncated: 1 more lines not shown\n") {
		t.Fatalf("long first line: %d bytes %q", len(d), d)
	}
}

func BenchmarkTextDiffTemplate(b *testing.B) {
	var before, after strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&before, "  - name: step %d\n    role: developer\n    brief: do %d\n", i, i)
		fmt.Fprintf(&after, "  - name: step %d\n    role: developer\n    brief: do %d\n", i, i+i%7/6)
	}
	for b.Loop() {
		TextDiff(before.String(), after.String(), 0)
	}
}

// BenchmarkTextDiffUnrelated is the worst case: two unrelated 1 MiB documents.
func BenchmarkTextDiffUnrelated(b *testing.B) {
	var before, after strings.Builder
	for i := 0; before.Len() < 1<<20; i++ {
		fmt.Fprintf(&before, "old line %d of the first document\n", i)
		fmt.Fprintf(&after, "new line %d of the other document\n", i)
	}
	for b.Loop() {
		TextDiff(before.String(), after.String(), 0)
	}
}

func randomLines(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + r.IntN(4)))
	}
	return out
}

func mutateLines(r *rand.Rand, a []string) []string {
	b := append([]string(nil), a...)
	for k := r.IntN(8); k > 0; k-- {
		switch i := r.IntN(len(b) + 1); {
		case r.IntN(2) == 0 && i < len(b):
			b = append(b[:i], b[i+1:]...)
		default:
			b = append(b[:i], append([]string{string(rune('a' + r.IntN(5)))}, b[i:]...)...)
		}
	}
	return b
}

// applyDiff applies a TextDiff to a, checking every hunk header and context line,
// and returns the result and the number of removed and added lines.
func applyDiff(t *testing.T, a []string, d string) ([]string, int) {
	t.Helper()
	var out []string
	pos, changed := 0, 0
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	if d == "" {
		lines = nil
	}
	for i := 0; i < len(lines); {
		var sa, na, sb, nb int
		if _, err := fmt.Sscanf(lines[i], "@@ -%d,%d +%d,%d @@", &sa, &na, &sb, &nb); err != nil {
			t.Fatalf("bad header %q in\n%s", lines[i], d)
		}
		start := sa - 1
		if na == 0 {
			start = sa
		}
		out = append(out, a[pos:start]...)
		pos = start
		if len(out) != max(sb-1, 0) && !(nb == 0 && len(out) == sb) {
			t.Fatalf("header %q: the new side starts at line %d", lines[i], len(out)+1)
		}
		i++
		ca, cb := 0, 0
		for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			switch l[0] {
			case ' ':
				if a[pos] != l[1:] {
					t.Fatalf("context %q is %q in before", l, a[pos])
				}
				out, pos, ca, cb = append(out, l[1:]), pos+1, ca+1, cb+1
			case '-':
				if a[pos] != l[1:] {
					t.Fatalf("removed %q is %q in before", l, a[pos])
				}
				pos, ca, changed = pos+1, ca+1, changed+1
			case '+':
				out, cb, changed = append(out, l[1:]), cb+1, changed+1
			}
		}
		if ca != na || cb != nb {
			t.Fatalf("header says -%d +%d, hunk has -%d +%d:\n%s", na, nb, ca, cb, d)
		}
	}
	return append(out, a[pos:]...), changed
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
