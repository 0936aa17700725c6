// Package pkgjson is the one package.json reader. It reads a package.json as npm
// does (json-parse-even-better-errors, which is JSON.parse after a leading
// byte-order mark is dropped): keys are case-sensitive and, of duplicate keys,
// the last one wins, at every level.
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
	var doc map[string]json.RawMessage
	// Decoding into a map keeps the last of duplicate keys, exactly (unlike a
	// struct, which matches keys case-insensitively and merges repeated objects).
	if json.Unmarshal(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), &doc) != nil {
		return nil, ErrNotObject
	}
	return doc, nil
}

// Scripts returns the scripts of a package.json by name: the "scripts" member's
// members whose value is a string (npm runs no other). A package.json without
// scripts, or whose scripts is not an object, has none; ErrNotObject when data is
// not a JSON object.
func Scripts(data []byte) (map[string]string, error) {
	doc, err := Members(data)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var scripts map[string]json.RawMessage
	if raw, ok := doc["scripts"]; !ok || json.Unmarshal(raw, &scripts) != nil {
		return out, nil
	}
	for name, raw := range scripts {
		var cmd string
		// null decodes into a string without error: ask for a string.
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) && json.Unmarshal(raw, &cmd) == nil {
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
	doc, err := Members(data)
	if err != nil {
		return nil, false
	}
	for _, sec := range DependencySections {
		raw, ok := doc[sec]
		if !ok {
			continue
		}
		var deps map[string]json.RawMessage
		if json.Unmarshal(raw, &deps) != nil {
			out[sec] = string(raw)
			continue
		}
		for name, v := range deps {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v) // overrides nest objects
			}
			key := name
			if sec != "dependencies" {
				key = sec + " " + name
			}
			out[key] = s
		}
	}
	return out, true
}
