package pages_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// While the sandbox is off every signed-in page says so; with it on, none does.
func TestSandboxBanner(t *testing.T) {
	const off = "sandbox off: workers run unconfined (--sandbox=off)"
	for _, banner := range []func() string{nil, func() string { return off }} {
		e := newEnvWith(t, "sqlite", envOptions{banner: banner})
		e.agent("lena", models.KindHuman, models.RoleLead)
		b := e.browser().login("lena")
		for _, path := range []string{"/", "/tasks", "/goals"} {
			body := b.get(path).Body
			shown := strings.Contains(body, `data-testid="sandbox-banner"`) && strings.Contains(body, off)
			if shown != (banner != nil) {
				t.Errorf("%s: banner shown %v, want %v", path, shown, banner != nil)
			}
		}
	}
}
