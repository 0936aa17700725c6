package contract

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Schema lists the keys a mapping may have, so that an unknown key is reported with
// its full path (steps[1].completion.foo) instead of being dropped. A nil schema
// accepts any value; a list schema is a sequence whose elements are mappings with
// its keys.
//
// The contract's own schemas (CompletionSchema, VerificationSchema, ReviewSchema) are
// not written out: they are read from the struct tags of the types the codec decodes
// (schemaOf), so a field added to a contract type is a known key at once.
type Schema struct {
	keys map[string]*Schema
	list bool
}

// Fields returns the schema of a mapping with exactly these keys; a key's schema is
// nil when its value may be anything.
func Fields(keys map[string]*Schema) *Schema { return &Schema{keys: keys} }

// ListOf returns the schema of a sequence whose elements are mappings with these
// keys.
func ListOf(keys map[string]*Schema) *Schema { return &Schema{keys: keys, list: true} }

// The contract's schemas, derived from the codec's types.
var (
	completionSchema   = schemaOf(wireType)
	verificationSchema = schemaOf(reflect.TypeFor[Verification]())
	reviewSchema       = schemaOf(reflect.TypeFor[Review]())
)

// CompletionSchema is the schema of a completion contract as written: Completion's
// fields and the seed alias max_iterations.
func CompletionSchema() *Schema { return completionSchema }

// VerificationSchema is the schema of a verification contract (its criteria and
// held-out tests checked too).
func VerificationSchema() *Schema { return verificationSchema }

// ReviewSchema is the schema of a review.
func ReviewSchema() *Schema { return reviewSchema }

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// schemaOf reads the keys of a struct type from its json tags (the names both codecs
// use; a field written only to JSON, like held_out_count, is still a known key). A
// field whose type is, or is a pointer to or a slice of, a struct of this package
// without a codec of its own gets that struct's schema; any other field is a leaf.
func schemaOf(t reflect.Type) *Schema {
	keys := map[string]*Schema{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys[name] = nestedSchema(f.Type)
	}
	return Fields(keys)
}

// nestedSchema is the schema of a field's value: nil for a leaf.
func nestedSchema(t reflect.Type) *Schema {
	list := false
	switch t.Kind() {
	case reflect.Pointer:
		t = t.Elem()
	case reflect.Slice:
		t, list = t.Elem(), true
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[Schema]().PkgPath() ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	s := schemaOf(t)
	s.list = list
	return s
}

func joinField(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// checkYAML records every key of n (a mapping, or a sequence of mappings when s.list)
// that s does not know.
func (s *Schema) checkYAML(n *yaml.Node, prefix string, fe *FieldErrors) {
	if s == nil || n == nil {
		return
	}
	n = YAMLResolve(n)
	if s.list {
		if n.Kind != yaml.SequenceNode {
			return // the decoder reports the type error
		}
		elem := &Schema{keys: s.keys}
		for i, e := range n.Content {
			elem.checkYAML(e, fmt.Sprintf("%s[%d]", prefix, i), fe)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" { // a merge key: check what it merges
			v = YAMLResolve(v)
			if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					s.checkYAML(e, prefix, fe)
				}
			} else {
				s.checkYAML(v, prefix, fe)
			}
			continue
		}
		child, ok := s.keys[k.Value]
		if !ok {
			fe.Add(joinField(prefix, k.Value), fmt.Sprintf("unknown field (line %d)", k.Line))
			continue
		}
		child.checkYAML(v, joinField(prefix, k.Value), fe)
	}
}

// checkJSON is checkYAML for a document decoded into any. Keys match case-insensitively,
// as encoding/json matches them.
func (s *Schema) checkJSON(v any, prefix string, fe *FieldErrors) {
	if s == nil {
		return
	}
	if s.list {
		l, ok := v.([]any)
		if !ok {
			return
		}
		elem := &Schema{keys: s.keys}
		for i, e := range l {
			elem.checkJSON(e, fmt.Sprintf("%s[%d]", prefix, i), fe)
		}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, val := range m {
		child, ok := s.keys[strings.ToLower(k)]
		if !ok {
			fe.Add(joinField(prefix, k), "unknown field")
			continue
		}
		child.checkJSON(val, joinField(prefix, k), fe)
	}
}

func unknownFieldsErr(fe FieldErrors) error {
	if len(fe) == 0 {
		return nil
	}
	e := fe.Err().(*Error)
	if len(fe) == 1 {
		for k := range fe {
			e.Message = "unknown field " + quote(k)
		}
	} else {
		e.Message = "unknown fields"
	}
	return e
}

// DecodeStrictJSON decodes one JSON object into v, first reporting unknown fields by
// their full path against schema (an EINVALID *Error keyed by path).
func DecodeStrictJSON(data []byte, schema *Schema, v any) error {
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return err
	}
	if _, ok := generic.(map[string]any); !ok {
		return errors.New("the document must be a JSON object")
	}
	var fe FieldErrors
	schema.checkJSON(generic, "", &fe)
	if err := unknownFieldsErr(fe); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// DecodeStrictYAML decodes one YAML mapping document into v, first reporting unknown
// fields by their full path against schema (an EINVALID *Error keyed by path).
func DecodeStrictYAML(data []byte, schema *Schema, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the document is empty")
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("only one YAML document is allowed (found a second '---')")
	}
	root := YAMLResolve(&doc)
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the document must be a mapping of fields", root.Line)
	}
	var fe FieldErrors
	schema.checkYAML(root, "", &fe)
	if err := unknownFieldsErr(fe); err != nil {
		return err
	}
	return root.Decode(v)
}

// YAMLResolve follows document and alias nodes to the node that holds the value.
func YAMLResolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		default:
			return n
		}
	}
	return n
}

// BadRequest turns a parser error into an EBADREQUEST *Error whose message starts
// with what, keeping the parser's line information; *Error values (unknown fields,
// alias conflicts) pass through.
func BadRequest(what string, err error, data []byte) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := err.Error()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg = fmt.Sprintf("line %d: %s", lineOf(data, se.Offset), se.Error())
	case errors.As(err, &te):
		msg = fmt.Sprintf("line %d: %s", lineOf(data, te.Offset), te.Error())
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return &Error{Code: EBADREQUEST, Message: what + ": " + msg}
}

func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}
