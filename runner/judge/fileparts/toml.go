package fileparts

import (
	"strings"

	"github.com/countersign/countersign/models/formats/toml"
)

// TOML parts (pyproject.toml#[tool.pytest]).
//
// The file is scanned statement by statement per the TOML spec: table headers
// [a.b] and [[a.b]] (keys bare, "basic" with escapes, 'literal', dotted with
// blanks around the dots), and key = value pairs whose values may span lines
// (multi-line strings, arrays with comments, inline tables, which TOML 1.1 lets
// span lines too), so a line inside a string or an array is never taken for a
// header. The scanner is models/formats/toml's (Scan), the one TOML reader; this
// file only decides what is protected and how it compares.
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

// norm is what counts in a statement: a header or key in canonical form, a value
// as written.
func norm(st toml.Stmt, d []byte) string {
	switch st.Kind {
	case toml.Blank:
		return ""
	case toml.Header, toml.ArrayHeader:
		return headerName(st.Kind, st.Key)
	case toml.KeyVal:
		return toml.RenderKey(st.Key) + " = " + string(d[st.ValueStart:st.TextEnd])
	}
	return strings.TrimRight(string(d[st.TextStart:max(st.TextEnd, st.TextStart)]), " \t\r\n")
}

type tomlSpec struct{ path []string }

// headerName writes a header in canonical form.
func headerName(kind toml.Kind, keys []string) string {
	if kind == toml.ArrayHeader {
		return "[[" + toml.RenderKey(keys) + "]]"
	}
	return "[" + toml.RenderKey(keys) + "]"
}

func (s tomlSpec) units(data []byte) ([]unit, bool) {
	var us []unit
	open := -1
	var table []string // the current table's path
	ctx := ""
	for _, st := range toml.Scan(data) {
		switch st.Kind {
		case toml.Header, toml.ArrayHeader:
			open = -1
			table, ctx = st.Key, headerName(st.Kind, st.Key)
			if toml.HasKeyPrefix(st.Key, s.path) {
				us = append(us, unit{key: ctx, names: []string{ctx}, start: st.Start, end: st.End, norm: norm(st, data)})
				open = len(us) - 1
			}
			continue
		}
		if open >= 0 {
			u := &us[open]
			u.end = st.End
			if n := norm(st, data); n != "" {
				u.norm += "\n" + n
			}
			continue
		}
		if st.Kind != toml.KeyVal {
			continue
		}
		full := append(append([]string{}, table...), st.Key...)
		if toml.HasKeyPrefix(full, s.path) || toml.HasKeyPrefix(s.path, full) {
			name := toml.RenderKey(full)
			us = append(us, unit{key: "kv:" + name, ctx: ctx, names: []string{name}, start: st.Start, end: st.End, norm: norm(st, data)})
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
	stmts := toml.Scan(worker)
	in := b.ctx == ""
	for _, st := range stmts {
		if st.Kind != toml.Header && st.Kind != toml.ArrayHeader {
			continue
		}
		if in {
			return st.Start
		}
		in = headerName(st.Kind, st.Key) == b.ctx
	}
	return len(worker)
}

func (s tomlSpec) consistent(base, judged []byte) bool { return true }
