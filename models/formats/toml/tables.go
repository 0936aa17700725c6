package toml

// HasTable reports whether data, read as Python's tomllib reads it, holds a table
// at path: a header names it or a table under it ([tool.ruff], [tool.ruff.lint],
// [[tool.ruff.x]]), a dotted key defines a key under it (under [tool],
// ruff.line-length = 100), or an inline table is it (tool = {ruff = {}}). A
// comment or a string that holds the text "[tool.ruff]" is no table; neither is
// an array of tables at or above path, nor a pair whose value is not a table.
func HasTable(data []byte, path ...string) bool {
	if len(path) == 0 {
		return true
	}
	t := &scanner{d: data}
	var table []string // the current table's path
	found, inArray := false, false
	for _, st := range Scan(data) {
		switch st.Kind {
		case Header, ArrayHeader:
			table = st.Key
			if st.Kind == ArrayHeader && HasKeyPrefix(path, st.Key) {
				inArray = true // path is the array, or inside one of its tables
			}
			if HasKeyPrefix(st.Key, path) {
				found = true
			}
		case KeyVal:
			full := append(table[:len(table):len(table)], st.Key...)
			if t.defines(full, st.ValueStart, path) {
				found = true
			}
		}
	}
	return found && !inArray
}

// defines reports whether the pair whose full key path is keys and whose value
// starts at vs makes a table at path: a key under path, or an inline table at
// path or holding it.
func (t *scanner) defines(keys []string, vs int, path []string) bool {
	if len(keys) > len(path) {
		return HasKeyPrefix(keys, path)
	}
	if !HasKeyPrefix(path, keys) || vs >= len(t.d) || t.d[vs] != '{' {
		return false
	}
	if len(keys) == len(path) {
		return true
	}
	rest := path[len(keys):]
	found := false
	// Each nested inline table is walked only while its path leads to path, so
	// the recursion is no deeper than path is long.
	t.list(vs, '}', func(q int) (int, bool) {
		k, e, ok := t.key(q)
		if !ok || e >= len(t.d) || t.d[e] != '=' {
			return e, false
		}
		v := t.skipBlank(e + 1)
		if t.defines(k, v, rest) {
			found = true
		}
		return t.value(v, 1)
	})
	return found
}
