package pkgjson

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

// objectCases are JSON texts on which the judge's member scanner (spans, for
// editing) and the value reader (Members) could read different members if they
// were two readers: duplicates at the top and nested, escaped keys that collide,
// a byte-order mark, null, what is not an object, what is not JSON.
var objectCases = []string{
	`{"a": 1, "b": [1, 2], "a": {"x": 1, "x": 2}}`,
	`{"scripts": {"t": "a"}, "scripts": null}`,
	`{"\u0061": 1, "a": 2, "b": {"c": {"d": 1, "d": [true]}}}`,
	"\xEF\xBB\xBF {\"scripts\": {\"test\": \"jest\"}}\n",
	"\t{ }\r\n",
	`{"a": [{"b": 1, "b": 2}], "a\"b": "\"}"}`,
	`null`,
	`[{"a": 1}]`,
	`"{}"`,
	`{"a": 1} x`,
	`{"a": 1,}`,
	`{"a": 1`,
}

func requireNode(t *testing.T, parser string) {
	t.Helper()
	_, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(parser)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are required in CI: %v", err)
		}
		t.Skipf("no node with npm: %v", err)
	}
}

// TestObjectViewsAgreeWithNpm reads each case with npm's parser and checks that
// Members (values) and Scan with Effective (spans) both see what it sees: the same
// members with the same values, null as no members, and anything else refused.
func TestObjectViewsAgreeWithNpm(t *testing.T) {
	const parser = "/usr/lib/node_modules/npm/node_modules/json-parse-even-better-errors"
	requireNode(t, parser)
	in, _ := json.Marshal(objectCases)
	script := `const parse = require(process.argv[1]);
console.log(JSON.stringify(JSON.parse(process.argv[2]).map(text => {
  let doc;
  try { doc = parse(text); } catch (e) { return "ERROR"; }
  if (doc === null) return "NULL";
  if (typeof doc !== "object" || Array.isArray(doc)) return "NOT AN OBJECT";
  return JSON.stringify(doc);
})));`
	out, err := exec.Command("node", "-e", script, parser, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(objectCases) {
		t.Fatalf("node said %s (%v)", out, err)
	}
	for i, text := range objectCases {
		data := []byte(text)
		members, err := Members(data)
		obj, scanned := Scan(data)
		switch want[i] {
		case "NULL":
			if err != nil || members != nil || scanned {
				t.Errorf("%q: npm reads null; Members = %v, %v; Scan ok = %v", text, members, err, scanned)
			}
			continue
		case "ERROR", "NOT AN OBJECT":
			if err != ErrNotObject || scanned {
				t.Errorf("%q: npm says %s; Members err = %v; Scan ok = %v", text, want[i], err, scanned)
			}
			continue
		}
		var npm map[string]any
		if err := json.Unmarshal([]byte(want[i]), &npm); err != nil {
			t.Fatal(err)
		}
		if got := decodeAll(t, members); err != nil || !reflect.DeepEqual(got, npm) {
			t.Errorf("%q: Members = %v (%v), npm reads %v", text, got, err, npm)
		}
		eff, _ := obj.Effective()
		spans := map[string]json.RawMessage{}
		for name, m := range eff {
			spans[name] = m.Value(data)
		}
		if got := decodeAll(t, spans); !scanned || !reflect.DeepEqual(got, npm) {
			t.Errorf("%q: Scan = %v (ok %v), npm reads %v", text, got, scanned, npm)
		}
	}
}

// decodeAll decodes each member's JSON text (nested duplicates: the last wins).
func decodeAll(t *testing.T, ms map[string]json.RawMessage) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, raw := range ms {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("member %q: %q: %v", name, raw, err)
		}
		out[name] = v
	}
	return out
}

// TestScanSpans: each member's spans cover its key, value and the blanks around
// them, so an editor can cut and rebuild the object byte for byte.
func TestScanSpans(t *testing.T) {
	doc := []byte("{\n  \"a\" : 1 ,\n  \"b\": {\"c\": \"}\"}\n}")
	obj, ok := Scan(doc)
	if !ok || len(obj.Members) != 2 || obj.Open != 0 || obj.Close != len(doc)-1 {
		t.Fatalf("Scan = %+v, %v", obj, ok)
	}
	a, b := obj.Members[0], obj.Members[1]
	if string(doc[a.LeadStart:a.KeyStart]) != "\n  " || string(doc[a.KeyStart:a.ValEnd]) != `"a" : 1` ||
		string(doc[a.ValEnd:a.GapEnd]) != " " || doc[a.GapEnd] != ',' {
		t.Errorf("a: %+v", a)
	}
	if b.Name != "b" || string(b.Value(doc)) != `{"c": "}"}` || b.GapEnd != b.ValEnd {
		t.Errorf("b: %+v", b)
	}
	inner, ok := ScanObject(doc, b.ValStart)
	if !ok || len(inner.Members) != 1 || string(inner.Members[0].Value(doc)) != `"}"` {
		t.Errorf("ScanObject = %+v, %v", inner, ok)
	}
	if _, ok := ScanObject(doc, a.ValStart); ok {
		t.Error("ScanObject read an object at a number")
	}
}

// FuzzMembersAgreeWithDecoding: Members, built on Scan, reads the members
// encoding/json reads into a map (the value reader's former implementation):
// the same refusals, names and value bytes.
func FuzzMembersAgreeWithDecoding(f *testing.F) {
	for _, c := range append(append([]string{}, objectCases...), npmCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Members(data)
		var want map[string]json.RawMessage
		werr := json.Unmarshal(bytes.TrimPrefix(data, bom), &want)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: Members err %v, encoding/json err %v", data, err, werr)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: Members %q, encoding/json %q", data, got, want)
		}
		for name, raw := range want {
			if !bytes.Equal(got[name], raw) {
				t.Fatalf("%q: member %q is %q, encoding/json reads %q", data, name, got[name], raw)
			}
		}
	})
}
