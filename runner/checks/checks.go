// Package checks holds the runner's check layers: small, independent functions that
// each judge one aspect of a worker attempt and return a models.CheckResult. The
// runner pool calls them cheapest first and stops at the first layer whose verdict is
// not pass or skipped:
//
//	Process → Contradiction → DoneToken → Mechanical → Verify → Workspace
//
// (then the semantic evaluator and the artifact review, see ReviewDecision).
//
// Every diagnosis is written for the worker that will read it in its revision brief:
// it says what was found, what the contract requires and where. A verdict of
// models.VerdictError means the check itself could not run (an infrastructure or
// contract problem) and must not be charged to the worker.
package checks

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// result builds a CheckResult for stage, timing it from start.
func result(stage, verdict, diagnosis string, start time.Time) models.CheckResult {
	return models.CheckResult{
		Stage:      stage,
		Verdict:    verdict,
		Diagnosis:  diagnosis,
		DurationMS: time.Since(start).Milliseconds(),
	}
}

// Passed reports whether r lets the runner go on to the next layer: pass or skipped.
func Passed(r models.CheckResult) bool {
	return r.Verdict == models.VerdictPass || r.Verdict == models.VerdictSkipped
}

// FormatDuration renders d the way contracts write durations: "30m", "1h30m", "90s",
// "1.5s", without the trailing zero units time.Duration.String adds.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.String()
	}
	s := d.Round(time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// quoteLine shortens a line for a diagnosis: trimmed, at most max bytes (cut on a
// rune boundary, with an ellipsis), and quoted.
func quoteLine(line string, max int) string {
	line = strings.TrimSpace(line)
	if len(line) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "…"
	}
	return fmt.Sprintf("%q", line)
}

// isWordByte reports whether b can be part of a token (letters, digits, underscore;
// any byte of a multi-byte rune counts as a letter).
func isWordByte(b byte) bool {
	return b == '_' || b >= 0x80 ||
		('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

// indexToken returns the byte offset of the first occurrence of tok in s that stands
// as a token of its own: where tok begins (ends) with a word character, the character
// before (after) it must not be one. So "done" is found in "all done." but not in
// "abandoned", and "TASK_COMPLETE" not in "TASK_COMPLETED". -1 when absent.
func indexToken(s, tok string) int {
	if tok == "" {
		return -1
	}
	checkStart, checkEnd := isWordByte(tok[0]), isWordByte(tok[len(tok)-1])
	for off := 0; off <= len(s)-len(tok); {
		i := strings.Index(s[off:], tok)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(tok)
		okStart := !checkStart || i == 0 || !isWordByte(s[i-1])
		okEnd := !checkEnd || end == len(s) || !isWordByte(s[end])
		if okStart && okEnd {
			return i
		}
		off = i + 1
	}
	return -1
}

// lineAt returns the 1-based number and the text of the line containing offset i.
func lineAt(s string, i int) (int, string) {
	n := strings.Count(s[:i], "\n") + 1
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += i
	}
	return n, strings.TrimRight(s[start:end], "\r")
}
