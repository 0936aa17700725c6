package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file reads and writes contracts as JSON and YAML.
//
// Decisions:
//   - Durations are text ("30m", "90s", "1h30m"); a bare integer is read as seconds,
//     so `timeout: 1800` and `timeout: 30m` mean the same. Fractions of a bare number
//     are refused rather than guessed at.
//   - `verify` is a list of commands, but a single string is accepted for the seeds'
//     `verify: "test -f …"`.
//   - max_attempts left out means the default (2); given, it must be at least 1, so an
//     explicit 0 is remembered (Completion.zeroMaxAttempts) for Validate to refuse.
//   - Seed aliases: `max_iterations` (Ralph mode's budget) is read as max_attempts;
//     a `signal` given without a `type` is the seeds' output token ("say ALL_DONE")
//     and becomes DoneToken with type none (or, if a path is given, an empty type that
//     Normalize turns into file). A `signal` with `type: signal` is the value of the
//     "signal" field in the JSON file at path.
//   - Unknown fields are errors naming the field. Completion checks its own keys in
//     both formats because encoding/json's DisallowUnknownFields and yaml.v3's
//     KnownFields do not reach into custom unmarshalers; ParseTemplate and
//     ParseTaskMarkdown check whole documents first so that the error carries the
//     full field path (steps[1].completion.foo).

// String renders the duration the way contracts write it: "30m", "1h30m", "90s" is
// "1m30s", "0s" for zero.
func (d Duration) String() string { return formatDuration(d.Duration) }

func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parseDuration reads "30m", "1h30m", "90s" or a bare integer number of seconds.
// The empty string is zero.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
			return 0, fmt.Errorf("duration %q is out of range", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit such as \"90s\", \"30m\" or \"1h30m\", or whole seconds", s)
	}
	return d, nil
}

// MarshalText writes the duration as text ("30m").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "30m", "90s" or whole seconds ("1800"); empty text is zero.
// Forms and query strings use it.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a JSON string ("30m").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a JSON string ("30m") or a whole number of seconds (1800);
// null leaves the duration unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return d.UnmarshalText([]byte(s))
	default:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("invalid duration %s: a bare number must be whole seconds", b)
		}
		return d.UnmarshalText([]byte(strconv.FormatInt(n, 10)))
	}
}

// MarshalYAML writes the duration as a YAML string ("30m").
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads "30m", "90s" or a whole number of seconds; null is zero.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	n = YAMLResolve(n)
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration must be a single value such as \"30m\"", n.Line)
	}
	switch n.Tag {
	case "!!null":
		d.Duration = 0
		return nil
	case "!!float":
		return fmt.Errorf("line %d: invalid duration %q: a bare number must be whole seconds", n.Line, n.Value)
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// commandList is the verify field: one command or a list of them.
type commandList []string

// UnmarshalJSON accepts a string, a list of strings or null.
func (c *commandList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = commandList{s}
		return nil
	case len(b) > 0 && b[0] == '[':
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return errors.New("verify must be a command or a list of commands")
		}
		*c = l
		return nil
	}
	return errors.New("verify must be a command or a list of commands")
}

// UnmarshalYAML accepts a scalar, a sequence of scalars or null.
func (c *commandList) UnmarshalYAML(n *yaml.Node) error {
	n = YAMLResolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*c = nil
			return nil
		}
		*c = commandList{n.Value}
		return nil
	case yaml.SequenceNode:
		l := make(commandList, 0, len(n.Content))
		for _, e := range n.Content {
			e = YAMLResolve(e)
			if e.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: each verify command must be a string", e.Line)
			}
			l = append(l, e.Value)
		}
		*c = l
		return nil
	}
	return fmt.Errorf("line %d: verify must be a command or a list of commands", n.Line)
}

// The wire form of Completion (how it is written, with the seed aliases) is not
// declared a second time: wireType is built once from Completion's exported fields by
// reflect.StructOf, each field under its own name and tags with a looser type
// (wireFieldType), and the aliases of seedAliases added after the field they stand
// for. Both codecs and the strict readers' schema (schema.go) read that type.

// seedAlias is a key the wire accepts that Completion lacks: another name of one of
// its fields, read as that field.
type seedAlias struct {
	field, of, key string // wire field name, Completion field it stands for, its key
}

// seedAliases are the seed aliases: Ralph mode's max_iterations is max_attempts.
var seedAliases = []seedAlias{{field: "MaxIterations", of: "MaxAttempts", key: "max_iterations"}}

// wireFieldType is the type a Completion field of type t is read and written in: a
// pointer where presence matters or a zero value must be left out (the numbers, the
// durations), a list of commands that may be written as one string, else t itself.
func wireFieldType(t reflect.Type) reflect.Type {
	switch {
	case t == reflect.TypeFor[Duration](), t.Kind() == reflect.Int:
		return reflect.PointerTo(t)
	case t == reflect.TypeFor[[]string]():
		return reflect.TypeFor[commandList]()
	}
	return t
}

// fieldPair is one field of Completion and its wire field, by index.
type fieldPair struct {
	c, w    int
	pointer bool // the wire field is a pointer to the Completion field's type
}

// wireType is Completion as it is written; completionPairs pairs its fields with
// Completion's.
var wireType, completionPairs = buildWire(reflect.TypeFor[Completion]())

// buildWire derives the wire type from c's exported fields and seedAliases.
func buildWire(c reflect.Type) (reflect.Type, []fieldPair) {
	var fields []reflect.StructField
	var pairs []fieldPair
	for cf := range c.Fields() {
		if !cf.IsExported() {
			continue
		}
		wt := wireFieldType(cf.Type)
		pairs = append(pairs, fieldPair{c: cf.Index[0], w: len(fields), pointer: wt != cf.Type && wt.Kind() == reflect.Pointer})
		fields = append(fields, reflect.StructField{Name: cf.Name, Type: wt, Tag: cf.Tag})
		for _, a := range seedAliases {
			if a.of == cf.Name {
				tag := fmt.Sprintf(`json:"%s,omitempty" yaml:"%s,omitempty"`, a.key, a.key)
				fields = append(fields, reflect.StructField{Name: a.field, Type: wt, Tag: reflect.StructTag(tag)})
			}
		}
	}
	return reflect.StructOf(fields), pairs
}

// completionFromWire reads w (a wireType value) into a Completion: the paired fields,
// then the aliases and the seeds' typeless signal.
func completionFromWire(w reflect.Value) (Completion, error) {
	var c Completion
	cv := reflect.ValueOf(&c).Elem()
	for _, p := range completionPairs {
		from, to := w.Field(p.w), cv.Field(p.c)
		switch {
		case !p.pointer:
			to.Set(from.Convert(to.Type()))
		case !from.IsNil():
			to.Set(from.Elem())
		}
	}
	for _, a := range seedAliases {
		alias, of := w.FieldByName(a.field), w.FieldByName(a.of)
		if !alias.IsNil() && !of.IsNil() {
			f, _ := reflect.TypeFor[Completion]().FieldByName(a.of)
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			return c, fmt.Errorf("give %s or its alias %s, not both", key, a.key)
		}
		if !alias.IsNil() {
			cv.FieldByName(a.of).Set(alias.Elem())
		}
	}
	if n, alias := w.FieldByName("MaxAttempts"), w.FieldByName("MaxIterations"); !n.IsNil() || !alias.IsNil() {
		// Given as 0 is not "the default" (which is left out): Validate refuses it.
		c.zeroMaxAttempts = c.MaxAttempts == 0
	}
	// The seeds' `completion: {signal: "ALL_DONE"}` has no type: the signal is a token
	// the worker prints, not a field of a JSON file.
	if strings.TrimSpace(string(c.Type)) == "" && c.Signal != "" && c.DoneToken == "" {
		c.DoneToken, c.Signal = c.Signal, ""
		if strings.TrimSpace(c.Path) == "" {
			c.Type = CompletionNone
		}
	}
	return c, nil
}

// wire is the form c is written in (a pointer to a wireType value): a pointer field
// is left out when its value is zero (a plain struct would write "0s" for every unset
// duration).
func (c Completion) wire() any {
	w := reflect.New(wireType)
	cv, wv := reflect.ValueOf(c), w.Elem()
	for _, p := range completionPairs {
		from, to := cv.Field(p.c), wv.Field(p.w)
		switch {
		case !p.pointer:
			to.Set(from.Convert(to.Type()))
		case !from.IsZero():
			ptr := reflect.New(from.Type())
			ptr.Elem().Set(from)
			to.Set(ptr)
		}
	}
	return w.Interface()
}

// MarshalJSON writes the completion contract, leaving out zero durations (a plain
// struct would write "0s" for every unset one).
func (c Completion) MarshalJSON() ([]byte, error) { return json.Marshal(c.wire()) }

// UnmarshalJSON reads the completion contract strictly (an unknown field is an
// error naming it) and accepts the seed aliases: verify as a string, max_iterations,
// and signal without a type as the done token.
func (c *Completion) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	w := reflect.New(wireType)
	if err := dec.Decode(w.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Struct == "" {
			te.Struct = "completion" // the derived wire type has no name of its own
		}
		return fmt.Errorf("completion: %w", err)
	}
	v, err := completionFromWire(w.Elem())
	if err != nil {
		return &Error{Code: EINVALID, Message: "completion: " + err.Error(), Fields: map[string]string{"max_attempts": err.Error()}}
	}
	*c = v
	return nil
}

// UnmarshalYAML reads the completion contract strictly, like UnmarshalJSON.
func (c *Completion) UnmarshalYAML(n *yaml.Node) error {
	n = YAMLResolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: completion must be a mapping", n.Line)
	}
	var fe FieldErrors
	completionSchema.checkYAML(n, "", &fe)
	if err := unknownFieldsErr(fe); err != nil {
		return err
	}
	w := reflect.New(wireType)
	if err := n.Decode(w.Interface()); err != nil {
		return err
	}
	v, err := completionFromWire(w.Elem())
	if err != nil {
		return &Error{Code: EINVALID, Message: fmt.Sprintf("line %d: completion: %s", n.Line, err), Fields: map[string]string{"max_attempts": err.Error()}}
	}
	*c = v
	return nil
}
