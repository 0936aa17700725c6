package models

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/models/contract"
)

// Template limits.
const (
	MaxTemplateSteps = 50
	maxTemplateDesc  = 2000
	maxStepName      = 100
	maxStepBrief     = 100000
)

var templateNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ParseTemplate reads a template file written in YAML or JSON (JSON when the first
// non-space byte is '{'). Input that cannot be read — a syntax error, a value of the
// wrong type, a document that is not a mapping — is an EBADREQUEST *Error carrying the
// parser's line; an unknown field is an EINVALID *Error keyed by its full path
// (steps[1].completion.foo). The seed aliases of Completion are accepted.
//
// A template file may be a bare `steps:` document without a name, like the example in
// completion-verification.md: ParseTemplate then leaves Name empty, and
// `countersign template import` takes the name from the file name (see
// TemplateNameFromFile). Identity fields a file may carry as API output (id,
// creator_id, created_at) are cleared: saving makes a new version. ParseTemplate does
// not validate; call Validate.
func ParseTemplate(data []byte) (*Template, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &Error{Code: EBADREQUEST, Message: "template: the file is empty"}
	}
	var t Template
	if trimmed[0] == '{' {
		if err := contract.DecodeStrictJSON(data, templateJSONSchema, &t); err != nil {
			return nil, contract.BadRequest("template", err, data)
		}
	} else {
		if err := contract.DecodeStrictYAML(data, templateYAMLSchema, &t); err != nil {
			return nil, contract.BadRequest("template", err, data)
		}
	}
	t.ID, t.CreatorID, t.CreatedAt = 0, 0, time.Time{}
	return &t, nil
}

// TemplateNameFromFile derives a template name from a file name for `template import`
// of a document without a name: the base name without its extension, lower-cased,
// with every character outside [a-z0-9._-] replaced by '-', cut to 64 characters
// ("Feature Flow.yaml" → "feature-flow").
func TemplateNameFromFile(filename string) string {
	base := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-._")
	}
	return name
}

// Normalize trims and lower-cases the template's name, its steps' roles and
// policies, and normalizes every step's contract (see Contract.Normalize), so what
// is saved is what runs.
func (t *Template) Normalize() {
	t.Name = strings.ToLower(strings.TrimSpace(t.Name))
	t.Description = strings.TrimSpace(t.Description)
	for i := range t.Steps {
		st := &t.Steps[i]
		st.Name = strings.TrimSpace(st.Name)
		st.Role = strings.ToLower(strings.TrimSpace(st.Role))
		st.Approve = strings.ToLower(strings.TrimSpace(st.Approve))
		st.Verify = strings.ToLower(strings.TrimSpace(st.Verify))
		st.Parallel = strings.ToLower(strings.TrimSpace(st.Parallel))
		c := st.Contract()
		c.Normalize()
		st.Completion, st.Verification, st.Review = c.Completion, c.Verification, c.Review
	}
}

// Validate normalizes the template (like Task.Validate trims) and checks it, returning
// an EINVALID error with field-level messages: name, description, steps,
// steps[2].role, steps[0].brief, steps[1].approve, steps[0].completion.path, …
// The name is 1-64 characters of [a-z0-9._-] starting with a letter or digit; there
// is at least one step and at most 50; approve and verify are runner, any or a role.
func (t *Template) Validate() error {
	t.Normalize()
	var fe FieldErrors
	switch {
	case t.Name == "":
		fe.Add("name", "is required")
	case !templateNameRE.MatchString(t.Name):
		fe.Add("name", "must be 1-64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if len(t.Description) > maxTemplateDesc {
		fe.Add("description", fmt.Sprintf("must be at most %d characters", maxTemplateDesc))
	}
	if t.Version < 0 {
		fe.Add("version", "must not be negative")
	}
	switch {
	case len(t.Steps) == 0:
		fe.Add("steps", "at least one step is required")
	case len(t.Steps) > MaxTemplateSteps:
		fe.Add("steps", fmt.Sprintf("at most %d steps", MaxTemplateSteps))
	}
	for i, st := range t.Steps {
		p := "steps[" + strconv.Itoa(i) + "]"
		if len(st.Name) > maxStepName {
			fe.Add(p+".name", fmt.Sprintf("must be at most %d characters", maxStepName))
		}
		switch {
		case st.Role == "":
			fe.Add(p+".role", "is required")
		case !contract.ValidRole(st.Role):
			fe.Add(p+".role", "must be 1-32 lower-case letters, digits, '_' or '-'")
		}
		switch {
		case strings.TrimSpace(st.Brief) == "":
			fe.Add(p+".brief", "is required: what the worker is asked to do")
		case len(st.Brief) > maxStepBrief:
			fe.Add(p+".brief", fmt.Sprintf("must be at most %d characters", maxStepBrief))
		}
		for name, pol := range map[string]Policy{"approve": st.Approve, "verify": st.Verify} {
			if pol != "" && pol != PolicyRunner && pol != PolicyAny && !contract.ValidRole(pol) {
				fe.Add(p+"."+name, "must be runner, any or a role")
			}
		}
		c := st.Contract()
		if err := c.Validate(); err != nil {
			var e *Error
			if errors.As(err, &e) {
				fe.Merge(p, FieldErrors(e.Fields))
			}
		}
	}
	validateParallel(t.Steps, &fe)
	return fe.Err()
}

// MarshalTemplateYAML writes a template as YAML that ParseTemplate reads back to the
// same template (identity fields, which a file does not carry, aside). Durations are
// written as text, verify as a list, unset fields are left out.
func MarshalTemplateYAML(t *Template) ([]byte, error) {
	if t == nil {
		return nil, errors.New("models: MarshalTemplateYAML of a nil template")
	}
	// Template.ID has no yaml tag, so yaml.v3 would write it as "id"; a file carries no
	// identity, so write only what ParseTemplate reads.
	doc := struct {
		Name        string `yaml:"name,omitempty"`
		Version     int    `yaml:"version,omitempty"`
		Description string `yaml:"description,omitempty"`
		Steps       []Step `yaml:"steps"`
	}{t.Name, t.Version, t.Description, t.Steps}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
