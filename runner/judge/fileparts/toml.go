package fileparts

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// TOML parts (pyproject.toml#[tool.pytest]).
//
// The file is scanned statement by statement per the TOML spec: table headers
// [a.b] and [[a.b]] (keys bare, "basic" with escapes, 'literal', dotted with
// blanks around the dots), and key = value pairs whose values may span lines
// (multi-line strings, arrays with comments, inline tables, which TOML 1.1 lets
// span lines too), so a line inside a string or an array is never taken for a
// header.
//
// Protected, for the part [P]:
//   - a table or array of tables whose key path starts with P ([tool.pytest],
//     [tool.pytest.ini_options], [[tool.pytest.x]]), from its header to the next
//     header: its unit is "[tool.pytest.ini_options]";
//   - a key/value pair anywhere else whose full path (the enclosing table's path
//     plus its dotted key) starts with P (under [tool]: pytest.ini_options.addopts
//     = ..., at top level: tool.pytest.ini_options.addopts = ...), or is an
//     ancestor of P whose value may hold it (tool = {pytest = {...}} at top level,
//     pytest = {...} under [tool]): its unit is the dotted path
//     "tool.pytest.ini_options.addopts" in the context of its table.
//
// Comments, blank lines, indentation and the spacing of a pair (up to the end of
// its value) are not part of what is compared. Not handled: a file that is not
// valid TOML is scanned leniently (the consumer refuses it anyway, and pytest
// fails on an invalid pyproject.toml); keys inside the inline table of an ancestor
// are not looked into (the whole pair is protected instead, so a worker's
// tool = {ruff = {...}} at top level is removed with it).

type tomlKind uint8

const (
	tBlank tomlKind = iota
	tHeader
	tArrayHeader
	tKeyVal
	tJunk
)

type tomlStmt struct {
	kind       tomlKind
	key        []string
	start, end int // the statement's lines, trailing newline included
	textStart  int // first non-blank byte
	valueStart int // key/value: where the value starts
	textEnd    int // end of the header or value: what counts
}

type tomlScanner struct {
	d []byte
}

func (t *tomlScanner) skipBlank(p int) int {
	for p < len(t.d) && (t.d[p] == ' ' || t.d[p] == '\t') {
		p++
	}
	return p
}

// skipSpaceLines skips blanks, newlines and comments (inside arrays and inline
// tables).
func (t *tomlScanner) skipSpaceLines(p int) int {
	for p < len(t.d) {
		switch t.d[p] {
		case ' ', '\t', '\r', '\n':
			p++
		case '#':
			for p < len(t.d) && t.d[p] != '\n' {
				p++
			}
		default:
			return p
		}
	}
	return p
}

func (t *tomlScanner) lineEnd(p int) int {
	for p < len(t.d) && t.d[p] != '\n' {
		p++
	}
	if p < len(t.d) {
		p++
	}
	return p
}

func isBareKeyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= 0x80
}

// key reads a dotted key at p.
func (t *tomlScanner) key(p int) ([]string, int, bool) {
	var keys []string
	for {
		p = t.skipBlank(p)
		if p >= len(t.d) {
			return nil, p, false
		}
		switch c := t.d[p]; {
		case c == '"':
			s, e, ok := t.basicString(p)
			if !ok {
				return nil, p, false
			}
			keys, p = append(keys, s), e
		case c == '\'':
			e := p + 1
			for e < len(t.d) && t.d[e] != '\'' && t.d[e] != '\n' {
				e++
			}
			if e >= len(t.d) || t.d[e] != '\'' {
				return nil, p, false
			}
			keys, p = append(keys, string(t.d[p+1:e])), e+1
		case isBareKeyByte(c):
			e := p
			for e < len(t.d) && isBareKeyByte(t.d[e]) {
				e++
			}
			keys, p = append(keys, string(t.d[p:e])), e
		default:
			return nil, p, false
		}
		q := t.skipBlank(p)
		if q < len(t.d) && t.d[q] == '.' {
			p = q + 1
			continue
		}
		return keys, q, true
	}
}

// basicString decodes a single-line "basic" string at p.
func (t *tomlScanner) basicString(p int) (string, int, bool) {
	var b strings.Builder
	for q := p + 1; q < len(t.d); q++ {
		c := t.d[q]
		switch {
		case c == '"':
			return b.String(), q + 1, true
		case c == '\n':
			return "", q, false
		case c == '\\':
			if q+1 >= len(t.d) {
				return "", q, false
			}
			q++
			switch e := t.d[q]; e {
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case '"', '\\':
				b.WriteByte(e)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if q+n >= len(t.d) {
					return "", q, false
				}
				v, err := strconv.ParseUint(string(t.d[q+1:q+1+n]), 16, 32)
				if err != nil || !utf8.ValidRune(rune(v)) {
					return "", q, false
				}
				b.WriteRune(rune(v))
				q += n
			default:
				return "", q, false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", len(t.d), false
}

// value skips the value at p and returns its end.
func (t *tomlScanner) value(p, depth int) (int, bool) {
	if depth > 256 || p >= len(t.d) {
		return p, false
	}
	d := t.d
	switch {
	case strings.HasPrefix(string(d[p:min(p+3, len(d))]), `"""`), strings.HasPrefix(string(d[p:min(p+3, len(d))]), `'''`):
		return t.multiString(p)
	case d[p] == '"':
		_, e, ok := t.basicString(p)
		return e, ok
	case d[p] == '\'':
		for q := p + 1; q < len(d); q++ {
			if d[q] == '\'' {
				return q + 1, true
			}
			if d[q] == '\n' {
				return q, false
			}
		}
		return len(d), false
	case d[p] == '[':
		return t.array(p, depth)
	case d[p] == '{':
		return t.inlineTable(p, depth)
	}
	return t.bare(p)
}

// multiString skips a multi-line string (three double or three single quotes)
// starting at p.
func (t *tomlScanner) multiString(p int) (int, bool) {
	d := t.d
	quote := d[p]
	for q := p + 3; q < len(d); q++ {
		if d[q] == '\\' && quote == '"' {
			q++
			continue
		}
		if d[q] == quote && q+2 < len(d) && d[q+1] == quote && d[q+2] == quote {
			r := 3
			for q+r < len(d) && d[q+r] == quote && r < 5 {
				r++
			}
			return q + r, true
		}
	}
	return len(d), false
}

// array skips an array starting at p.
func (t *tomlScanner) array(p, depth int) (int, bool) {
	return t.list(p, ']', func(q int) (int, bool) { return t.value(q, depth+1) })
}

// inlineTable skips an inline table starting at p.
func (t *tomlScanner) inlineTable(p, depth int) (int, bool) {
	return t.list(p, '}', func(q int) (int, bool) {
		_, k, ok := t.key(q)
		if !ok || k >= len(t.d) || t.d[k] != '=' {
			return k, false
		}
		return t.value(t.skipBlank(k+1), depth+1)
	})
}

// list skips the items (read by item) of an array or inline table opening at p
// and closed by close, commas between them and blank lines anywhere.
func (t *tomlScanner) list(p int, close byte, item func(int) (int, bool)) (int, bool) {
	d := t.d
	q := p + 1
	for {
		q = t.skipSpaceLines(q)
		if q >= len(d) {
			return q, false
		}
		if d[q] == close {
			return q + 1, true
		}
		var ok bool
		if q, ok = item(q); !ok {
			return q, false
		}
		q = t.skipSpaceLines(q)
		if q < len(d) && d[q] == ',' {
			q++
			continue
		}
		if q < len(d) && d[q] == close {
			return q + 1, true
		}
		return q, false
	}
}

// bare skips a number, boolean or date-time starting at p.
func (t *tomlScanner) bare(p int) (int, bool) {
	d := t.d
	q := p
	for q < len(d) && !strings.ContainsRune(" \t\r\n,]}#", rune(d[q])) {
		q++
	}
	// A date and a time may be separated by a space.
	if q-p == 10 && q+1 < len(d) && d[q] == ' ' && d[q+1] >= '0' && d[q+1] <= '9' && d[p+4] == '-' {
		q++
		for q < len(d) && !strings.ContainsRune(" \t\r\n,]}#", rune(d[q])) {
			q++
		}
	}
	return q, q > p
}

// restOfLine checks that only blanks and a comment follow p on its line, and
// returns the start of the next line.
func (t *tomlScanner) restOfLine(p int) (int, bool) {
	p = t.skipBlank(p)
	if p < len(t.d) && t.d[p] == '#' {
		return t.lineEnd(p), true
	}
	if p < len(t.d) && t.d[p] == '\r' {
		p++
	}
	if p >= len(t.d) {
		return p, true
	}
	if t.d[p] == '\n' {
		return p + 1, true
	}
	return t.lineEnd(p), false
}

func scanTOML(data []byte) []tomlStmt {
	t := &tomlScanner{d: data}
	var out []tomlStmt
	for pos := 0; pos < len(data); {
		p := t.skipBlank(pos)
		st := tomlStmt{start: pos, textStart: p}
		switch {
		case p >= len(data) || data[p] == '\n' || data[p] == '\r' || data[p] == '#':
			st.kind, st.end = tBlank, t.lineEnd(p)
		case data[p] == '[':
			kind, q := tHeader, p+1
			if q < len(data) && data[q] == '[' {
				kind, q = tArrayHeader, q+1
			}
			keys, q, ok := t.key(q)
			if ok && q < len(data) && data[q] == ']' {
				q++
				if kind == tArrayHeader {
					ok = q < len(data) && data[q] == ']'
					q++
				}
			} else {
				ok = false
			}
			if ok {
				var end int
				if end, ok = t.restOfLine(q); ok {
					st.kind, st.key, st.end, st.textEnd = kind, keys, end, q
				}
			}
			if !ok {
				st.kind, st.end = tJunk, t.lineEnd(p)
			}
		default:
			keys, q, ok := t.key(p)
			if ok && q < len(data) && data[q] == '=' {
				var e int
				vs := t.skipBlank(q + 1)
				if e, ok = t.value(vs, 0); ok {
					var end int
					if end, ok = t.restOfLine(e); ok {
						st.kind, st.key, st.end, st.textEnd, st.valueStart = tKeyVal, keys, end, e, vs
					} else {
						st.kind, st.end = tJunk, end
					}
				} else {
					st.kind, st.end = tJunk, t.lineEnd(max(e, p))
				}
			} else {
				st.kind, st.end = tJunk, t.lineEnd(p)
			}
		}
		if st.kind == tJunk {
			st.textEnd = st.end
		}
		if st.end <= pos { // cannot happen; never loop forever
			st.end = t.lineEnd(pos)
		}
		out = append(out, st)
		pos = st.end
	}
	return out
}

// norm is what counts in a statement: a header or key in canonical form, a value
// as written.
func (st tomlStmt) norm(d []byte) string {
	switch st.kind {
	case tBlank:
		return ""
	case tHeader, tArrayHeader:
		return headerName(st.kind, st.key)
	case tKeyVal:
		return renderTOMLKey(st.key) + " = " + string(d[st.valueStart:st.textEnd])
	}
	return strings.TrimRight(string(d[st.textStart:max(st.textEnd, st.textStart)]), " \t\r\n")
}

// parseTOMLKeyString parses a part's table name as a TOML key.
func parseTOMLKeyString(s string) ([]string, bool) {
	t := &tomlScanner{d: []byte(s)}
	keys, p, ok := t.key(0)
	return keys, ok && t.skipBlank(p) == len(s)
}

func renderTOMLKey(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		bare := k != ""
		for j := 0; j < len(k); j++ {
			if !isBareKeyByte(k[j]) || k[j] >= 0x80 {
				bare = false
			}
		}
		if bare {
			parts[i] = k
		} else {
			parts[i] = strconv.Quote(k)
		}
	}
	return strings.Join(parts, ".")
}

func hasKeyPrefix(keys, prefix []string) bool {
	if len(keys) < len(prefix) {
		return false
	}
	for i := range prefix {
		if keys[i] != prefix[i] {
			return false
		}
	}
	return true
}

type tomlSpec struct{ path []string }

func headerName(kind tomlKind, keys []string) string {
	if kind == tArrayHeader {
		return "[[" + renderTOMLKey(keys) + "]]"
	}
	return "[" + renderTOMLKey(keys) + "]"
}

func (s tomlSpec) units(data []byte) ([]unit, bool) {
	var us []unit
	open := -1
	var table []string // the current table's path
	ctx := ""
	for _, st := range scanTOML(data) {
		switch st.kind {
		case tHeader, tArrayHeader:
			open = -1
			table, ctx = st.key, headerName(st.kind, st.key)
			if hasKeyPrefix(st.key, s.path) {
				us = append(us, unit{key: ctx, names: []string{ctx}, start: st.start, end: st.end, norm: st.norm(data)})
				open = len(us) - 1
			}
			continue
		}
		if open >= 0 {
			u := &us[open]
			u.end = st.end
			if n := st.norm(data); n != "" {
				u.norm += "\n" + n
			}
			continue
		}
		if st.kind != tKeyVal {
			continue
		}
		full := append(append([]string{}, table...), st.key...)
		if hasKeyPrefix(full, s.path) || hasKeyPrefix(s.path, full) {
			name := renderTOMLKey(full)
			us = append(us, unit{key: "kv:" + name, ctx: ctx, names: []string{name}, start: st.start, end: st.end, norm: st.norm(data)})
		}
	}
	return us, true
}

// anchor puts a table at the end of the file, and a dotted key at the end of the
// worker's table of the same name (or before the first header, for top level).
func (s tomlSpec) anchor(worker []byte, wus []unit, b unit) int {
	if !strings.HasPrefix(b.key, "kv:") {
		return len(worker)
	}
	stmts := scanTOML(worker)
	in := b.ctx == ""
	for _, st := range stmts {
		if st.kind != tHeader && st.kind != tArrayHeader {
			continue
		}
		if in {
			return st.start
		}
		in = headerName(st.kind, st.key) == b.ctx
	}
	return len(worker)
}

func (s tomlSpec) consistent(base, judged []byte) bool { return true }
