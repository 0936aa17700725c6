package contract

import (
	"fmt"
	"sort"
	"strings"
)

// Error codes carried by *Error. Handlers map them to HTTP statuses; the runner and the
// CLI use them to tell a caller's mistake from a failure of ours.
const (
	EBADREQUEST   = "bad_request"  // the request could not be read at all (malformed JSON, YAML)
	EINVALID      = "invalid"      // the request was read but a field is wrong
	ENOTFOUND     = "not_found"    // the thing named does not exist
	ECONFLICT     = "conflict"     // the thing is in a state that does not allow this
	EFORBIDDEN    = "forbidden"    // the actor may not do this (role, separation of duties)
	EUNAUTHORIZED = "unauthorized" // no valid credentials
	ETOOLARGE     = "too_large"    // the request body is larger than the server reads
	EINTERNAL     = "internal"     // our fault; the message shown is generic
)

// Error is the domain error. Code decides the HTTP status; Message is safe to show to
// the caller; Fields carries field-level messages for EINVALID; Rule names the rule a
// EFORBIDDEN violates; State and Allowed describe a refused transition for ECONFLICT.
type Error struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
	Rule    string            `json:"rule,omitempty"`
	State   string            `json:"state,omitempty"`
	Allowed []string          `json:"allowed,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+e.Fields[k])
	}
	return e.Message + " (" + strings.Join(parts, "; ") + ")"
}

// Errorf returns an *Error with the given code and a formatted, caller-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrors collects field-level validation messages and turns them into one
// EINVALID error. The zero value is ready to use.
type FieldErrors map[string]string

// Add records msg for field unless the field already has a message: the first
// problem found is the one worth fixing first.
func (f *FieldErrors) Add(field, msg string) {
	if *f == nil {
		*f = FieldErrors{}
	}
	if _, ok := (*f)[field]; !ok {
		(*f)[field] = msg
	}
}

// Merge adds every message of other under prefix (joined with a dot).
func (f *FieldErrors) Merge(prefix string, other FieldErrors) {
	for k, v := range other {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		f.Add(name, v)
	}
}

// Err returns nil when no field has a message, else an EINVALID *Error. A message
// that ends with "(rule <name>)" names the refusal's rule (the first such field, in
// field order, when several do).
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string(f), Rule: fieldRule(f)}
}

// fieldRule is the rule named at the end of a field's message ("… (rule <name>)"),
// of the first such field in field order; "" when none names one.
func fieldRule(f FieldErrors) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg := f[k]
		if !strings.HasSuffix(msg, ")") {
			continue
		}
		if i := strings.LastIndex(msg, "(rule "); i >= 0 {
			if name := msg[i+len("(rule ") : len(msg)-1]; name != "" && !strings.ContainsAny(name, " ()") {
				return name
			}
		}
	}
	return ""
}
