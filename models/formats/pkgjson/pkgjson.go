// Package pkgjson is the one package.json reader, and the one reader of JSON
// objects member by member. It reads a package.json as npm does
// (json-parse-even-better-errors, which is JSON.parse after a leading byte-order
// mark is dropped): keys are case-sensitive and, of duplicate keys, the last one
// wins, at every level.
//
// Two views share one grammar: Scan and ScanObject give an object's members with
// their byte spans (the judge's runner/judge/fileparts restores protected members
// of a worker's package.json in place with them, keeping key order and
// formatting), and Members, Scripts and Dependencies, built on the same scan,
// give values (the contract code's models/contract reads a workspace's scripts,
// the judge's runner/judge compares dependencies). Object.Effective is the one
// duplicate-key rule of both; models/formats/onehome_test.go forbids a second
// JSON object scanner.
package pkgjson

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrNotObject is returned for a package.json that is not a JSON object.
var ErrNotObject = errors.New("not valid JSON: scripts unknown")

// Members returns the top-level members of a package.json by name, each value's
// JSON text; ErrNotObject when data is not a JSON object (null has no members).
func Members(data []byte) (map[string]json.RawMessage, error) {
	top, err := topMembers(data)
	if err != nil || top == nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(top))
	for name, m := range top {
		out[name] = m.Value(data)
	}
	return out, nil
}

// topMembers returns the members JSON.parse keeps of data's top-level object by
// name: nil for null (which has none), ErrNotObject for what is not an object.
func topMembers(data []byte) (map[string]Member, error) {
	obj, ok := Scan(data)
	if !ok {
		if isNull(data) {
			return nil, nil
		}
		return nil, ErrNotObject
	}
	top, _ := obj.Effective()
	return top, nil
}

// isNull reports whether data is the JSON document null (a leading byte-order
// mark allowed, as everywhere).
func isNull(data []byte) bool {
	return string(bytes.Trim(bytes.TrimPrefix(data, bom), " \t\r\n")) == "null"
}

// Scripts returns the scripts of a package.json by name: the "scripts" member's
// members whose value is a string (npm runs no other). A package.json without
// scripts, or whose scripts is not an object, has none; ErrNotObject when data is
// not a JSON object.
func Scripts(data []byte) (map[string]string, error) {
	top, err := topMembers(data)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	s, ok := top["scripts"]
	if !ok {
		return out, nil
	}
	sobj, ok := ScanObject(data, s.ValStart)
	if !ok {
		return out, nil
	}
	scripts, _ := sobj.Effective()
	for name, m := range scripts {
		var cmd string
		// null decodes into a string without error: ask for a string.
		if data[m.ValStart] == '"' && json.Unmarshal(m.Value(data), &cmd) == nil {
			out[name] = cmd
		}
	}
	return out, nil
}

// DependencySections are the members of a package.json that name dependencies
// (Dependencies reads them).
var DependencySections = []string{"dependencies", "devDependencies", "optionalDependencies",
	"peerDependencies", "overrides", "resolutions"}

// Dependencies reads a package.json's dependency lists: "chai" -> "^4.3.0" for
// dependencies, "devDependencies chai" -> "^4.3.0" for the other sections (an
// overrides entry that nests an object keeps its JSON text, as does a section
// that is not an object). An empty data has none; ok is false when data is not a
// JSON object.
func Dependencies(data []byte) (map[string]string, bool) {
	out := map[string]string{}
	if data == nil {
		return out, true
	}
	top, err := topMembers(data)
	if err != nil {
		return nil, false
	}
	for _, sec := range DependencySections {
		m, ok := top[sec]
		if !ok {
			continue
		}
		addDependencies(out, data, sec, m)
	}
	return out, true
}

// addDependencies adds the entries of the dependency section m (named sec) of
// data to out, keyed as Dependencies says.
func addDependencies(out map[string]string, data []byte, sec string, m Member) {
	deps, ok := ScanObject(data, m.ValStart)
	if !ok {
		if string(m.Value(data)) != "null" { // null is a section with no entries
			out[sec] = string(m.Value(data))
		}
		return
	}
	eff, _ := deps.Effective()
	for name, v := range eff {
		var s string
		if json.Unmarshal(v.Value(data), &s) != nil {
			s = string(v.Value(data)) // overrides nest objects
		}
		key := name
		if sec != "dependencies" {
			key = sec + " " + name
		}
		out[key] = s
	}
}
