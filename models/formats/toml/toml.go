// Package toml is the one TOML reader of the module: a statement scanner per the
// TOML spec (v1.0, with 1.1's multi-line inline tables), which both the judge
// (runner/judge/fileparts, restoring a protected [tool.pytest] table of a
// worker's pyproject.toml in place) and the contract code (models/contract,
// detecting which tools a workspace's pyproject.toml configures) import.
//
// Scan splits a document into statements: table headers [a.b] and [[a.b]] (keys
// bare, "basic" with escapes, 'literal', dotted with blanks around the dots) and
// key = value pairs whose values may span lines (multi-line strings, arrays with
// comments, inline tables), so a line inside a string or an array is never taken
// for a header, and a comment is never read. HasTable answers, from the same
// statements, whether a table exists as Python's tomllib reads it. It does not
// build values and does not refuse invalid TOML: what it cannot read is a Junk
// statement. models/formats/onehome_test.go forbids a second TOML reader.
package toml

import (
	"strconv"
	"strings"
)

// Kind is what a statement is.
type Kind uint8

// The kinds of statement.
const (
	Blank       Kind = iota // a blank line or a comment
	Header                  // a table header, [a.b]
	ArrayHeader             // an array-of-tables header, [[a.b]]
	KeyVal                  // a key/value pair, a.b = value (the value may span lines)
	Junk                    // a line that is none of these: the file is not valid TOML
)

// Stmt is one statement of a TOML document, by byte offsets into it.
type Stmt struct {
	Kind       Kind
	Key        []string // a header's table path or a pair's dotted key, decoded
	Start, End int      // the statement's lines, trailing newline included
	TextStart  int      // first non-blank byte
	ValueStart int      // key/value: where the value starts
	TextEnd    int      // end of the header or value: what counts
}

// ParseKey parses s, all of it, as a TOML key (bare, quoted or dotted, blanks
// around the dots allowed): "tool . 'pytest'" is [tool pytest].
func ParseKey(s string) ([]string, bool) {
	t := &scanner{d: []byte(s)}
	keys, p, ok := t.key(0)
	return keys, ok && t.skipBlank(p) == len(s)
}

// RenderKey writes keys as a canonical dotted key: bare where TOML allows it,
// quoted otherwise, so two spellings of one key render alike.
func RenderKey(keys []string) string {
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

// HasKeyPrefix reports whether the key path keys starts with prefix (or is it).
func HasKeyPrefix(keys, prefix []string) bool {
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
