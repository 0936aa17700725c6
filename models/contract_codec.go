package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	n = yamlResolve(n)
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
	n = yamlResolve(n)
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
			e = yamlResolve(e)
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

// completionWire is Completion as it is written, with the seed aliases.
type completionWire struct {
	Type          CompletionType `json:"type,omitempty" yaml:"type,omitempty"`
	Path          string         `json:"path,omitempty" yaml:"path,omitempty"`
	MinLength     int            `json:"min_length,omitempty" yaml:"min_length,omitempty"`
	Signal        string         `json:"signal,omitempty" yaml:"signal,omitempty"`
	DoneToken     string         `json:"done_token,omitempty" yaml:"done_token,omitempty"`
	Verify        commandList    `json:"verify,omitempty" yaml:"verify,omitempty"`
	VerifyTimeout *Duration      `json:"verify_timeout,omitempty" yaml:"verify_timeout,omitempty"`
	Evaluate      string         `json:"evaluate,omitempty" yaml:"evaluate,omitempty"`
	MaxAttempts   *int           `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	MaxIterations *int           `json:"max_iterations,omitempty" yaml:"max_iterations,omitempty"` // seed alias
	Timeout       *Duration      `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	Cooldown      *Duration      `json:"cooldown,omitempty" yaml:"cooldown,omitempty"`
	Clean         bool           `json:"clean,omitempty" yaml:"clean,omitempty"`
	Checklist     *Checklist     `json:"checklist,omitempty" yaml:"checklist,omitempty"`
}

func (w completionWire) completion() (Completion, error) {
	c := Completion{
		Type: w.Type, Path: w.Path, MinLength: w.MinLength, Signal: w.Signal, DoneToken: w.DoneToken,
		Verify: []string(w.Verify), Evaluate: w.Evaluate, Clean: w.Clean, Checklist: w.Checklist,
	}
	if w.MaxAttempts != nil && w.MaxIterations != nil {
		return c, errors.New("give max_attempts or its alias max_iterations, not both")
	}
	for _, n := range []*int{w.MaxAttempts, w.MaxIterations} {
		if n != nil {
			// Given as 0 is not "the default" (which is left out): Validate refuses it.
			c.MaxAttempts, c.zeroMaxAttempts = *n, *n == 0
		}
	}
	for _, p := range []struct {
		from *Duration
		to   *Duration
	}{{w.VerifyTimeout, &c.VerifyTimeout}, {w.Timeout, &c.Timeout}, {w.Cooldown, &c.Cooldown}} {
		if p.from != nil {
			*p.to = *p.from
		}
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

func (c Completion) wire() completionWire {
	w := completionWire{
		Type: c.Type, Path: c.Path, MinLength: c.MinLength, Signal: c.Signal, DoneToken: c.DoneToken,
		Verify: commandList(c.Verify), Evaluate: c.Evaluate, Clean: c.Clean, Checklist: c.Checklist,
	}
	if c.MaxAttempts != 0 {
		n := c.MaxAttempts
		w.MaxAttempts = &n
	}
	if c.VerifyTimeout.Duration != 0 {
		w.VerifyTimeout = &Duration{c.VerifyTimeout.Duration}
	}
	if c.Timeout.Duration != 0 {
		w.Timeout = &Duration{c.Timeout.Duration}
	}
	if c.Cooldown.Duration != 0 {
		w.Cooldown = &Duration{c.Cooldown.Duration}
	}
	return w
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
	var w completionWire
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("completion: %w", err)
	}
	v, err := w.completion()
	if err != nil {
		return &Error{Code: EINVALID, Message: "completion: " + err.Error(), Fields: map[string]string{"max_attempts": err.Error()}}
	}
	*c = v
	return nil
}

// UnmarshalYAML reads the completion contract strictly, like UnmarshalJSON.
func (c *Completion) UnmarshalYAML(n *yaml.Node) error {
	n = yamlResolve(n)
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
	var w completionWire
	if err := n.Decode(&w); err != nil {
		return err
	}
	v, err := w.completion()
	if err != nil {
		return &Error{Code: EINVALID, Message: fmt.Sprintf("line %d: completion: %s", n.Line, err), Fields: map[string]string{"max_attempts": err.Error()}}
	}
	*c = v
	return nil
}

// fieldSchema lists the keys a mapping may have, so that an unknown key is reported
// with its full path. A nil schema accepts any value; list means the value is a
// sequence whose elements are mappings with these keys.
type fieldSchema struct {
	keys map[string]*fieldSchema
	list bool
}

var (
	checklistSchema  = &fieldSchema{keys: map[string]*fieldSchema{"path": nil, "count": nil}}
	completionSchema = &fieldSchema{keys: map[string]*fieldSchema{
		"type": nil, "path": nil, "min_length": nil, "signal": nil, "done_token": nil, "verify": nil,
		"verify_timeout": nil, "evaluate": nil, "max_attempts": nil, "max_iterations": nil,
		"timeout": nil, "cooldown": nil, "clean": nil, "checklist": checklistSchema,
	}}
	criteriaSchema = &fieldSchema{list: true, keys: map[string]*fieldSchema{
		"activity": nil, "description": nil, "pattern": nil, "timing": nil, "command": nil,
		"stack": nil, "tools": nil,
	}}
	verificationSchema = &fieldSchema{keys: map[string]*fieldSchema{
		"type": nil, "criteria": criteriaSchema, "generated_from": nil, "generated_at": nil,
		"workspace": nil, "stacks": nil, "protect": nil, "tests_may_change": nil, "dependencies_may_change": nil,
		"held_out": heldOutSchema, "held_out_count": nil,
	}}
	heldOutSchema = &fieldSchema{list: true, keys: map[string]*fieldSchema{"path": nil, "content": nil}}
	reviewSchema  = &fieldSchema{keys: map[string]*fieldSchema{
		"role": nil, "when": nil, "every": nil, "max_rounds": nil, "on_exhausted": nil,
	}}
	stepsSchema = &fieldSchema{list: true, keys: map[string]*fieldSchema{
		"name": nil, "role": nil, "brief": nil, "approve": nil, "verify": nil, "parallel": nil,
		"completion": completionSchema, "verification": verificationSchema, "review": reviewSchema,
	}}
	templateYAMLSchema = &fieldSchema{keys: map[string]*fieldSchema{
		"name": nil, "version": nil, "description": nil, "steps": stepsSchema,
	}}
	// JSON templates may be API output, which also carries the identity fields.
	templateJSONSchema = &fieldSchema{keys: map[string]*fieldSchema{
		"id": nil, "name": nil, "version": nil, "description": nil, "steps": stepsSchema,
		"creator_id": nil, "created_at": nil,
	}}
	// The task front matter accepts the seed's own keys (estimate, workstream, phase,
	// status) so a seed task file imports as written.
	taskFrontMatterSchema = &fieldSchema{keys: map[string]*fieldSchema{
		"id": nil, "title": nil, "role": nil, "priority": nil, "depends_on": nil,
		"approve": nil, "verify": nil, "status": nil, "estimate": nil, "workstream": nil, "phase": nil,
		"completion": completionSchema, "verification": verificationSchema, "review": reviewSchema,
	}}
)

func joinField(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// checkYAML records every key of n (a mapping, or a sequence of mappings when s.list)
// that s does not know.
func (s *fieldSchema) checkYAML(n *yaml.Node, prefix string, fe *FieldErrors) {
	if s == nil || n == nil {
		return
	}
	n = yamlResolve(n)
	if s.list {
		if n.Kind != yaml.SequenceNode {
			return // the decoder reports the type error
		}
		elem := &fieldSchema{keys: s.keys}
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
			v = yamlResolve(v)
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
func (s *fieldSchema) checkJSON(v any, prefix string, fe *FieldErrors) {
	if s == nil {
		return
	}
	if s.list {
		l, ok := v.([]any)
		if !ok {
			return
		}
		elem := &fieldSchema{keys: s.keys}
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

// yamlResolve follows document and alias nodes to the node that holds the value.
func yamlResolve(n *yaml.Node) *yaml.Node {
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

// badRequest turns a parser error into an EBADREQUEST *Error, keeping the parser's
// line information; *Error values (unknown fields, alias conflicts) pass through.
func badRequest(what string, err error, data []byte) error {
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
