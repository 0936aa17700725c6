package contract

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The contract's fields are declared once, on its types (contract.go). The codec's
// wire form of Completion is derived from them with looser types; these tests fail
// when the derivation or a codec loses a field.

// TestCompletionWireMatches: every field of Completion is a field of the derived wire
// type with the same name and tags, and the wire has no field Completion lacks but
// the seed aliases.
func TestCompletionWireMatches(t *testing.T) {
	c, w := reflect.TypeFor[Completion](), wireType
	aliases := map[string]bool{}
	for _, a := range seedAliases {
		aliases[a.field] = true
	}
	for f := range c.Fields() {
		if !f.IsExported() {
			continue
		}
		wf, ok := w.FieldByName(f.Name)
		if !ok {
			t.Errorf("the wire lacks %s", f.Name)
			continue
		}
		if wf.Tag != f.Tag {
			t.Errorf("%s: wire tags %q, Completion's %q", f.Name, wf.Tag, f.Tag)
		}
	}
	for f := range w.Fields() {
		if _, ok := c.FieldByName(f.Name); !ok && !aliases[f.Name] {
			t.Errorf("wire field %s is no field of Completion and no seed alias", f.Name)
		}
	}
	if len(completionPairs) == 0 {
		t.Fatal("no fields paired")
	}
}

// fill sets every exported field of v (a pointer) to a value other than its zero:
// strings "s<n>", numbers n, true, one-element slices, allocated pointers. Nested
// structs are filled too; n counts the values so that no two fields are equal.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n))
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Second))
		} else {
			v.SetInt(int64(*n))
		}
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, *n, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

// filledContract is a contract with every field set.
func filledContract(t *testing.T) Contract {
	var c Contract
	n := 0
	fill(t, reflect.ValueOf(&c).Elem(), &n)
	return c
}

// TestContractRoundTripsEveryField: a contract with every field set reads back
// equal from JSON and from YAML (held_out_count, never stored, is JSON only).
func TestContractRoundTripsEveryField(t *testing.T) {
	c := filledContract(t)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Contract
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("JSON: %v\n%+v\n%+v\n%s", err, back, c, b)
	}
	y, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var ys Contract
	want := c
	want.Verification.HeldOutCount = 0
	if err := yaml.Unmarshal(y, &ys); err != nil || !reflect.DeepEqual(ys, want) {
		t.Fatalf("YAML: %v\n%+v\n%+v\n%s", err, ys, want, y)
	}
}

// TestSchemasKnowEveryField: the strict readers' schemas know exactly the keys the
// contract is written with (and the seed aliases).
func TestSchemasKnowEveryField(t *testing.T) {
	b, err := json.Marshal(filledContract(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for part, s := range map[string]*Schema{"completion": CompletionSchema(), "verification": VerificationSchema(), "review": ReviewSchema()} {
		var written, known []string
		for k := range doc[part] {
			written = append(written, k)
		}
		for k := range s.keys {
			if k != "max_iterations" {
				known = append(known, k)
			}
		}
		slices.Sort(written)
		slices.Sort(known)
		if !slices.Equal(written, known) {
			t.Errorf("%s: written %q, schema %q", part, written, known)
		}
	}
	if s := CompletionSchema().keys["checklist"]; s == nil || len(s.keys) != 2 {
		t.Errorf("checklist schema %+v", s)
	}
	if s := VerificationSchema().keys["criteria"]; s == nil || !s.list || len(s.keys) != 7 {
		t.Errorf("criteria schema %+v", s)
	}
}
