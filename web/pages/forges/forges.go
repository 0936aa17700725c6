// Package forges is the admins' forges page (the GitHub and GitLab repositories that
// verified task branches become pull requests on, with an add form) and a forge's page
// (edit, token replacement, webhook secret rotation, login mappings, delete). No view
// model here has a field for a forge's token: a page cannot render what it is never
// given. A webhook secret is rendered once, on the page answering its creation or
// rotation.
package forges

import (
	"strings"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the list page's model.
type View struct {
	Meta  layout.PageMeta
	CSRF  string
	Rows  []Row
	Kinds []components.Option
	// Add is the add form as typed (never its token); AddErrors its field errors
	// (name, kind, repo, base_url, target_branch, token).
	Add       Form
	AddErrors map[string]string
	// NewSecret, set once on the page that answers a creation, is the webhook secret
	// of forge NewName.
	NewSecret string
	NewName   string
	// NewKind is that forge's kind, for the webhook settings to pick.
	NewKind string
}

// Row is one forge.
type Row struct {
	Name         string
	Kind         string
	Repo         string
	BaseURL      string
	TargetBranch string
	// WebhookURL is where the forge posts its deliveries: this server's URL and the
	// forge's webhook path.
	WebhookURL string
	// Agents name the forge: their verified branches become its pull requests.
	Agents []string
	Users  []User
}

// User is a forge login mapped to an agent.
type User struct {
	Login string
	Agent string
}

// Form is the add or edit form as typed. It has no token: the token input is always
// rendered empty.
type Form struct {
	Name         string
	Kind         string
	Repo         string
	BaseURL      string
	TargetBranch string
}

// MapForm is the form that maps a login to an agent, as typed.
type MapForm struct {
	Login string
	Agent string
}

// ForgeView is a forge's page model.
type ForgeView struct {
	Meta   layout.PageMeta
	CSRF   string
	Row    Row
	Kinds  []components.Option
	Edit   Form
	Errors map[string]string
	// NewSecret, set once on the page that answers a rotation.
	NewSecret string
	// AgentOptions are the agents a login can act as.
	AgentOptions []components.Option
	Map          MapForm
	MapErrors    map[string]string
}

// Kinds are the forge kinds an admin picks from.
var Kinds = []components.Option{{Value: "github", Label: "GitHub"}, {Value: "gitlab", Label: "GitLab"}}

func href(name string) string { return "/forges/" + name }

func join(s []string) string {
	if len(s) == 0 {
		return "—"
	}
	return strings.Join(s, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func props(errs map[string]string, name, label, value string) components.FieldProps {
	return components.FieldProps{Name: name, Label: label, Value: value, Error: errs[name]}
}

func withHelp(p components.FieldProps, help string) components.FieldProps {
	p.Help = help
	return p
}

// tokenField is the token's password input: its value is always empty, whatever was
// typed, so a re-rendered form never carries the credential back.
func tokenField(errs map[string]string, label, help string) components.FieldProps {
	return components.FieldProps{Name: "token", Label: label, Type: "password", Autocomplete: "new-password", Error: errs["token"], Help: help}
}
