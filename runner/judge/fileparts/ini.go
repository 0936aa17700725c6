package fileparts

import (
	"strings"
	"unicode"
)

// INI parts (setup.cfg#[tool:pytest], tox.ini#[pytest], pytest.ini#[pytest]).
//
// Sections are split as pytest's iniconfig splits them: lines end at any of
// Python's line boundaries (\n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028,
// U+2029); a section header is a line whose first character is '[' and which,
// cut at the first '#' or ';' and right-trimmed, ends with ']'. An indented
// "[x]" is a continuation line, not a header. A section runs from its header to
// the next header; a header names the protected section when its name equals the
// part's, or does so once trimmed (newer iniconfig can strip it). Comment lines
// (first non-blank '#' or ';'), blank lines and trailing blanks do not count.
//
// Gap: configparser (setuptools, tox) also takes an indented "[x]" or one followed
// by other text for a header; pytest, which reads [tool:pytest] and [pytest],
// does not.

type iniLine struct {
	start, end int // bytes, terminator included
	text       string
}

// pyLines splits data at Python's str.splitlines boundaries (after universal
// newline translation, so \r and \r\n too).
func pyLines(data []byte) []iniLine {
	var out []iniLine
	start := 0
	for i := 0; i < len(data); {
		c := data[i]
		n := 0 // terminator length
		switch {
		case c == '\n', c == 0x0b, c == 0x0c, c >= 0x1c && c <= 0x1e:
			n = 1
		case c == '\r':
			n = 1
			if i+1 < len(data) && data[i+1] == '\n' {
				n = 2
			}
		case c == 0xC2 && i+1 < len(data) && data[i+1] == 0x85:
			n = 2
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			n = 3
		}
		if n == 0 {
			i++
			continue
		}
		out = append(out, iniLine{start, i + n, string(data[start:i])})
		i += n
		start = i
	}
	if start < len(data) {
		out = append(out, iniLine{start, len(data), string(data[start:])})
	}
	return out
}

func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func pyRstrip(s string) string { return strings.TrimRightFunc(s, pyIsSpace) }

// iniHeader returns the section a line heads, as iniconfig reads it.
func iniHeader(line string) (string, bool) {
	if !strings.HasPrefix(line, "[") {
		return "", false
	}
	cut := line
	if i := strings.IndexAny(cut, "#;"); i >= 0 {
		cut = cut[:i]
	}
	cut = pyRstrip(cut)
	if len(cut) < 2 || cut[len(cut)-1] != ']' {
		return "", false
	}
	return cut[1 : len(cut)-1], true
}

func iniComment(line string) bool {
	t := strings.TrimLeftFunc(line, pyIsSpace)
	return t == "" || t[0] == '#' || t[0] == ';'
}

type iniSpec struct{ section string }

func (s iniSpec) units(data []byte) ([]unit, bool) {
	var us []unit
	open := -1
	key := "[" + s.section + "]"
	for _, l := range pyLines(data) {
		if name, ok := iniHeader(l.text); ok {
			open = -1
			if name == s.section || strings.TrimFunc(name, pyIsSpace) == s.section {
				head, _, _ := strings.Cut(l.text, "#")
				head, _, _ = strings.Cut(head, ";")
				us = append(us, unit{key: key, names: []string{key}, start: l.start, end: l.end, norm: pyRstrip(head)})
				open = len(us) - 1
			}
			continue
		}
		if open < 0 {
			continue
		}
		u := &us[open]
		u.end = l.end
		if !iniComment(l.text) {
			u.norm += "\n" + pyRstrip(l.text)
		}
	}
	return us, true
}

func (s iniSpec) anchor(worker []byte, wus []unit, b unit) int { return len(worker) }

func (s iniSpec) consistent(base, judged []byte) bool { return true }
