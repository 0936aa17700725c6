// Package templates is the list of workflow templates and the YAML import form.
package templates

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/layout"
)

// View is the list page's model.
type View struct {
	Meta layout.PageMeta
	Rows []Row
	// CanEdit shows the New and Import buttons (lead, admin, editor).
	CanEdit bool
}

// Row is one template: its latest version.
type Row struct {
	Name        string
	Description string
	Latest      int
	Steps       int
	CreatedAt   time.Time // when the latest version was saved
	Creator     string
}

// ImportView is the import page's model.
type ImportView struct {
	Meta layout.PageMeta
	CSRF string
	Name string // optional: overrides (or supplies) the document's name
	YAML string
	// Errors maps "name" and "yaml" to their message; Details lists the template's
	// field errors (steps[0].completion.path: …) under the YAML.
	Errors  map[string]string
	Details []string
	// Refused says why the signed-in agent may not import (not an editor, lead or
	// admin): shown above the form, whose text is kept.
	Refused string
}

func href(name string) string { return "/templates/" + name }

func itoa(n int) string { return strconv.Itoa(n) }
