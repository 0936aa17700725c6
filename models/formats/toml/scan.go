package toml

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// scanner reads statements, keys and values of the document d.
type scanner struct {
	d []byte
}

func (t *scanner) skipBlank(p int) int {
	for p < len(t.d) && (t.d[p] == ' ' || t.d[p] == '\t') {
		p++
	}
	return p
}

// skipSpaceLines skips blanks, newlines and comments (inside arrays and inline
// tables).
func (t *scanner) skipSpaceLines(p int) int {
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

func (t *scanner) lineEnd(p int) int {
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
func (t *scanner) key(p int) ([]string, int, bool) {
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
func (t *scanner) basicString(p int) (string, int, bool) {
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
func (t *scanner) value(p, depth int) (int, bool) {
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
func (t *scanner) multiString(p int) (int, bool) {
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
func (t *scanner) array(p, depth int) (int, bool) {
	return t.list(p, ']', func(q int) (int, bool) { return t.value(q, depth+1) })
}

// inlineTable skips an inline table starting at p.
func (t *scanner) inlineTable(p, depth int) (int, bool) {
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
func (t *scanner) list(p int, close byte, item func(int) (int, bool)) (int, bool) {
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
func (t *scanner) bare(p int) (int, bool) {
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
func (t *scanner) restOfLine(p int) (int, bool) {
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

// Scan splits data into its statements, in order; together they cover every byte
// of data. A statement that is not a header, a pair or a blank line is Junk, one
// line long.
func Scan(data []byte) []Stmt {
	t := &scanner{d: data}
	var out []Stmt
	for pos := 0; pos < len(data); {
		p := t.skipBlank(pos)
		st := Stmt{Start: pos, TextStart: p}
		switch {
		case p >= len(data) || data[p] == '\n' || data[p] == '\r' || data[p] == '#':
			st.Kind, st.End = Blank, t.lineEnd(p)
		case data[p] == '[':
			kind, q := Header, p+1
			if q < len(data) && data[q] == '[' {
				kind, q = ArrayHeader, q+1
			}
			keys, q, ok := t.key(q)
			if ok && q < len(data) && data[q] == ']' {
				q++
				if kind == ArrayHeader {
					ok = q < len(data) && data[q] == ']'
					q++
				}
			} else {
				ok = false
			}
			if ok {
				var end int
				if end, ok = t.restOfLine(q); ok {
					st.Kind, st.Key, st.End, st.TextEnd = kind, keys, end, q
				}
			}
			if !ok {
				st.Kind, st.End = Junk, t.lineEnd(p)
			}
		default:
			keys, q, ok := t.key(p)
			if ok && q < len(data) && data[q] == '=' {
				var e int
				vs := t.skipBlank(q + 1)
				if e, ok = t.value(vs, 0); ok {
					var end int
					if end, ok = t.restOfLine(e); ok {
						st.Kind, st.Key, st.End, st.TextEnd, st.ValueStart = KeyVal, keys, end, e, vs
					} else {
						st.Kind, st.End = Junk, end
					}
				} else {
					st.Kind, st.End = Junk, t.lineEnd(max(e, p))
				}
			} else {
				st.Kind, st.End = Junk, t.lineEnd(p)
			}
		}
		if st.Kind == Junk {
			st.TextEnd = st.End
		}
		if st.End <= pos { // cannot happen; never loop forever
			st.End = t.lineEnd(pos)
		}
		out = append(out, st)
		pos = st.End
	}
	return out
}
