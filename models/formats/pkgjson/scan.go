package pkgjson

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Member is one member of a JSON object, by byte offsets into its document, so an
// editor can rewrite one member and leave every other byte as written.
type Member struct {
	Name      string // the key, decoded
	LeadStart int    // just after the '{' or ',' before the member
	KeyStart  int    // the key's opening quote
	ValStart  int    // the value's first byte
	ValEnd    int    // just after the value
	GapEnd    int    // the ',' after the value, or ValEnd for the last member
}

// Object is one JSON object: where it opens and closes and its members in the
// order written, duplicates included.
type Object struct {
	Open, Close int // offsets of '{' and '}'
	Members     []Member
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// Scan checks that data is a JSON document whose top level is an object (a UTF-8
// byte-order mark, which npm strips, is allowed) and returns that object; ok is
// false for anything else, null included.
func Scan(data []byte) (Object, bool) {
	off := 0
	if bytes.HasPrefix(data, bom) {
		off = len(bom)
	}
	if !json.Valid(data[off:]) {
		return Object{}, false
	}
	p := skipSpace(data, off)
	if p >= len(data) || data[p] != '{' {
		return Object{}, false
	}
	return ScanObject(data, p)
}

// ScanObject reads the object opening at data[open] of a document Scan accepted
// (a member's value, say); ok is false when data[open] does not open an object.
func ScanObject(data []byte, open int) (Object, bool) {
	obj := Object{Open: open}
	if open >= len(data) || data[open] != '{' {
		return obj, false
	}
	pos := open + 1
	for {
		p := skipSpace(data, pos)
		if p >= len(data) {
			return obj, false
		}
		if data[p] == '}' && len(obj.Members) == 0 {
			obj.Close = p
			return obj, true
		}
		m, ok := scanMember(data, pos, p)
		if !ok {
			return obj, false
		}
		obj.Members = append(obj.Members, m)
		q := skipSpace(data, m.ValEnd)
		if q >= len(data) {
			return obj, false
		}
		switch data[q] {
		case ',':
			obj.Members[len(obj.Members)-1].GapEnd = q
			pos = q + 1
		case '}':
			obj.Close = q
			return obj, true
		default:
			return obj, false
		}
	}
}

// scanMember reads the member whose key opens at data[p] (lead: where the space
// before it starts).
func scanMember(data []byte, lead, p int) (Member, bool) {
	keyEnd, ok := skipString(data, p)
	if !ok {
		return Member{}, false
	}
	var name string
	if json.Unmarshal(data[p:keyEnd], &name) != nil {
		return Member{}, false
	}
	q := skipSpace(data, keyEnd)
	if q >= len(data) || data[q] != ':' {
		return Member{}, false
	}
	vs := skipSpace(data, q+1)
	ve, ok := skipValue(data, vs)
	if !ok {
		return Member{}, false
	}
	return Member{Name: name, LeadStart: lead, KeyStart: p, ValStart: vs, ValEnd: ve, GapEnd: ve}, true
}

// Effective returns, by name, the member of each name that JSON.parse keeps (the
// last), and the names in order of their last occurrence.
func (o Object) Effective() (map[string]Member, []string) {
	last := map[string]int{}
	for i, m := range o.Members {
		last[m.Name] = i
	}
	out := map[string]Member{}
	var order []string
	for i, m := range o.Members {
		if last[m.Name] == i {
			out[m.Name] = m
			order = append(order, m.Name)
		}
	}
	return out, order
}

// Value is the JSON text of m's value in doc, the document m was scanned from.
func (m Member) Value(doc []byte) json.RawMessage { return doc[m.ValStart:m.ValEnd] }

func skipSpace(d []byte, p int) int {
	for p < len(d) && (d[p] == ' ' || d[p] == '\t' || d[p] == '\n' || d[p] == '\r') {
		p++
	}
	return p
}

func skipString(d []byte, p int) (int, bool) {
	if p >= len(d) || d[p] != '"' {
		return p, false
	}
	for q := p + 1; q < len(d); q++ {
		switch d[q] {
		case '\\':
			q++
		case '"':
			return q + 1, true
		}
	}
	return p, false
}

// skipValue returns the end of the value starting at d[p], iteratively (no
// recursion on nesting).
func skipValue(d []byte, p int) (int, bool) {
	if p >= len(d) {
		return p, false
	}
	switch d[p] {
	case '"':
		return skipString(d, p)
	case '{', '[':
		depth := 0
		for q := p; q < len(d); {
			switch d[q] {
			case '"':
				e, ok := skipString(d, q)
				if !ok {
					return p, false
				}
				q = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return q + 1, true
				}
			}
			q++
		}
		return p, false
	default:
		q := p
		for q < len(d) && !strings.ContainsRune(",}] \t\r\n", rune(d[q])) {
			q++
		}
		return q, q > p
	}
}
