package pages_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// While the sandbox is off every signed-in page says so; with it on, none does.
func TestSandboxBanner(t *testing.T) {
	t.Parallel()
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

// An admin sees a worker's effective sandbox policy on its page; nobody else does.
func TestEffectivePolicyOnAgentPage(t *testing.T) {
	t.Parallel()
	policy := func(a *models.Agent) []string {
		return []string{"read, write and execute /data/work/agents/" + a.Name + "/home"}
	}
	e := newEnvWith(t, "sqlite", envOptions{policy: policy})
	e.agent("ada", models.KindHuman, models.RoleAdmin)
	e.agent("lena", models.KindHuman, models.RoleLead)
	w := e.agent("quinn", models.KindWorker, "developer")
	path := "/agents/" + strconv.FormatInt(w.ID, 10)
	admin := e.browser().login("ada").get(path).Body
	if !strings.Contains(admin, `data-testid="effective-policy"`) || !strings.Contains(admin, "/data/work/agents/quinn/home") {
		t.Errorf("the admin does not see the effective policy")
	}
	if lead := e.browser().login("lena").get(path).Body; strings.Contains(lead, `data-testid="effective-policy"`) {
		t.Errorf("a lead sees the effective policy")
	}
}
