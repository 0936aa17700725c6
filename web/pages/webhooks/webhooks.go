// Package webhooks is the admins' webhooks page (the endpoints, an add form) and an
// endpoint's page (edit, secret rotation, its deliveries with a Redeliver button and
// the delivery log). A signing secret is shown once, on the page that answers its
// creation or rotation; URLs are shown to admins only (a Slack URL is a credential).
package webhooks

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the list page's model.
type View struct {
	Meta layout.PageMeta
	CSRF string
	Rows []Row
	// Events are the notifications an endpoint can subscribe to.
	Events []string
	// Add is the add form as typed; AddErrors its field errors (name, url, events).
	Add       Form
	AddErrors map[string]string
	// NewSecret, set once on the page that answers a creation, is the secret of
	// NewName.
	NewSecret string
	NewName   string
}

// Row is one endpoint in the list.
type Row struct {
	ID             int64
	Name           string
	URL            string
	Events         []string
	Enabled        bool
	DisabledReason string
	Rotating       bool // signing with two secrets
}

// Form is the add or edit form as typed.
type Form struct {
	Name    string
	URL     string
	Events  []string
	Enabled bool
}

// Has reports whether the form chose event e.
func (f Form) Has(e string) bool {
	for _, x := range f.Events {
		if x == e {
			return true
		}
	}
	return false
}

// HookView is an endpoint's page model.
type HookView struct {
	Meta   layout.PageMeta
	CSRF   string
	Row    Row
	Events []string
	Edit   Form
	Errors map[string]string
	// NewSecret, set once on the page that answers a rotation.
	NewSecret  string
	Deliveries []Delivery
	Attempts   []Attempt
}

// Delivery is one notification to the endpoint.
type Delivery struct {
	ID          int64
	Event       string
	EventID     int64
	MessageID   string
	State       string
	Attempts    int
	LastStatus  int
	LastError   string
	NextAttempt time.Time // when pending
	CreatedAt   time.Time
	DeliveredAt *time.Time
}

// Attempt is one line of the delivery log.
type Attempt struct {
	DeliveryID int64
	At         time.Time
	Status     int
	Error      string
	DurationMS int64
}

func href(id int64) string { return "/webhooks/" + strconv.FormatInt(id, 10) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func itoa(n int) string { return strconv.Itoa(n) }

func status(n int) string {
	if n == 0 {
		return "—"
	}
	return strconv.Itoa(n)
}

func stateClass(s string) string {
	switch s {
	case "delivered":
		return components.StateClass("verified")
	case "failed":
		return components.StateClass("blocked")
	}
	return components.StateClass("in_progress")
}

func joinEvents(es []string) string { return strings.Join(es, ", ") }

func props(errs map[string]string, name, label, value string) components.FieldProps {
	return components.FieldProps{Name: name, Label: label, Value: value, Error: errs[name]}
}

func withHelp(p components.FieldProps, help string) components.FieldProps {
	p.Help = help
	return p
}
