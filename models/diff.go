package models

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/models/contract"
)

// DiffLimit bounds the diffs the audit trail records in events: 8 KiB.
const DiffLimit = 8 << 10

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// maxDiffEdits bounds the edits TextDiff searches for a shortest diff; a change larger
// than this (after the common first and last lines are set aside) is shown as the old
// lines removed and the new ones added. It keeps a diff of two large, unrelated
// documents cheap in time and memory.
const maxDiffEdits = 512

// TextDiff returns a unified-style line diff from before to after: hunks headed
// "@@ -l,n +l,n @@", each changed line prefixed "-" (removed) or "+" (added), with up
// to three unchanged lines (" ") around each change. It returns "" when the texts
// are equal. The diff is at most limit bytes (DiffLimit when limit <= 0): a longer one
// is cut at a line boundary and ends with a line saying how many lines were left out.
// A final newline is not significant: "a" and "a\n" differ in no line.
func TextDiff(before, after string, limit int) string {
	if before == after {
		return ""
	}
	if limit <= 0 {
		limit = DiffLimit
	}
	a, b := splitLines(before), splitLines(after)
	lines := unified(diffLines(a, b))
	if len(lines) == 0 {
		return ""
	}
	return boundLines(lines, limit)
}

// splitLines splits s into lines without their newlines; "" has none.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffOp is one line of an edit script: kept (' '), removed ('-') or added ('+').
type diffOp struct {
	kind byte
	text string
}

// diffLines returns an edit script turning a into b: the common first and last lines
// kept, and a shortest edit script (Myers) of the middle, or the middle replaced
// wholesale when it needs more than maxDiffEdits edits.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb, maxDiffEdits)
	if !ok {
		mid = mid[:0]
		for _, l := range ma {
			mid = append(mid, diffOp{'-', l})
		}
		for _, l := range mb {
			mid = append(mid, diffOp{'+', l})
		}
	}
	ops = append(ops, mid...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// myers finds a shortest edit script from a to b with at most maxD edits (Myers'
// O((N+M)·D) greedy algorithm, keeping each round's furthest reaching paths to trace
// the script back). ok is false when more edits are needed.
func myers(a, b []string, maxD int) (ops []diffOp, ok bool) {
	n, m := len(a), len(b)
	off := maxD + 1
	v := make([]int, 2*off+1) // v[off+k]: furthest x on diagonal k
	var trace [][]int         // trace[d][k+d]: v after round d, for k in [-d, d]
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an added line
			} else {
				x = v[off+k-1] + 1 // right: a removed line
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(a, b, trace), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

// backtrack walks the rounds of myers back from the end of both texts and returns
// the edit script in order.
func backtrack(a, b []string, trace [][]int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // prev[k+d-1] for k in [-(d-1), d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		px := at(prevK)
		py := px - prevK
		for x > px && y > py {
			rev = append(rev, diffOp{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if x == px {
			rev = append(rev, diffOp{'+', b[y-1]})
		} else {
			rev = append(rev, diffOp{'-', a[x-1]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, diffOp{' ', a[x-1]})
		x, y = x-1, y-1
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unified groups an edit script into hunks with diffContext lines of context and
// returns the diff's lines, headers included; none when nothing changed.
func unified(ops []diffOp) []string {
	var out []string
	la, lb := 0, 0 // lines of a and b before ops[i]
	for i := 0; i < len(ops); {
		start := nextChange(ops, i)
		if start < 0 {
			break
		}
		from := max(start-diffContext, i)
		to := min(hunkEnd(ops, start)+diffContext, len(ops))
		la, lb = advance(ops[i:from], la, lb)
		na, nb := advance(ops[from:to], 0, 0)
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(la, na), hunkRange(lb, nb)))
		for _, op := range ops[from:to] {
			out = append(out, string(op.kind)+op.text)
		}
		la, lb, i = la+na, lb+nb, to
	}
	return out
}

// advance counts ops as lines of a (kept and removed) and of b (kept and added) on
// top of la and lb.
func advance(ops []diffOp, la, lb int) (int, int) {
	for _, op := range ops {
		if op.kind != '+' {
			la++
		}
		if op.kind != '-' {
			lb++
		}
	}
	return la, lb
}

// nextChange returns the index of the first removed or added line at or after i, or
// -1.
func nextChange(ops []diffOp, i int) int {
	for ; i < len(ops); i++ {
		if ops[i].kind != ' ' {
			return i
		}
	}
	return -1
}

// hunkEnd returns the index after the last change of the hunk starting with the
// change at start: changes closer than twice the context share a hunk.
func hunkEnd(ops []diffOp, start int) int {
	end := start + 1
	for {
		next := nextChange(ops, end)
		if next < 0 || next-end >= 2*diffContext {
			return end
		}
		end = next + 1
	}
}

// hunkRange is one side of a hunk header: the first line and the count, where an
// empty side names the line before it, as diff -u does.
func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// minDiffLimit is the smallest limit TextDiff honours: room for a header, part of a
// line and the note.
const minDiffLimit = 128

// boundLines joins lines with newlines into at most limit bytes: the lines that fit
// whole, then a note of how many were left out. When not even the first changed line
// fits, it is cut, so that a diff is never only headers and the note.
func boundLines(lines []string, limit int) string {
	limit = max(limit, minDiffLimit)
	total := 0
	for _, l := range lines {
		total += len(l) + 1
	}
	if total <= limit {
		return strings.Join(lines, "\n") + "\n"
	}
	var sb strings.Builder
	shown := false // a line other than a header was written
	for i, l := range lines {
		note := truncationNote(len(lines) - i)
		if sb.Len()+len(l)+1+len(note) <= limit {
			sb.WriteString(l)
			sb.WriteByte('\n')
			shown = shown || !strings.HasPrefix(l, "@@")
			continue
		}
		if !shown {
			note = truncationNote(len(lines) - i - 1)
			sb.WriteString(contract.Truncate(l, limit-sb.Len()-len(note)-1))
			sb.WriteByte('\n')
		}
		sb.WriteString(note)
		break
	}
	return sb.String()
}

// truncationNote is the last line of a cut diff, naming the lines left out.
func truncationNote(left int) string {
	if left == 0 {
		return "… diff truncated\n"
	}
	return fmt.Sprintf("… diff truncated: %d more lines not shown\n", left)
}
