package pages_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestAgentsPageShowsTheGateway: the agents page says whether the runner's model
// gateway serves, which providers, how many live credentials, and how confined runs
// reach the network; a gateway that is off says that usage is then the workers' word.
func TestAgentsPageShowsTheGateway(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		st   models.GatewayStatus
		want []string
	}{
		{"serving", models.GatewayStatus{Serving: true, Addr: "127.0.0.1:4100", Providers: []string{"Anthropic", "OpenAI"}, Live: 3,
			Network: "private", Egress: []string{"registry.npmjs.org"}},
			[]string{`data-serving="true"`, `data-live="3"`, "127.0.0.1:4100", "Anthropic, OpenAI", "private network", "registry.npmjs.org"}},
		{"off", models.GatewayStatus{Network: "ports"},
			[]string{`data-serving="false"`, "Model gateway off", "port rules"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			e := newEnvWith(t, "sqlite", envOptions{gateway: func() models.GatewayStatus { return st }})
			e.team()
			r := e.browser().login("lead").get("/agents")
			if r.Status != http.StatusOK {
				t.Fatalf("agents page: %d", r.Status)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Body, w) {
					t.Errorf("the agents page does not say %q", w)
				}
			}
		})
	}
	e := newEnv(t, "sqlite")
	e.team()
	if r := e.browser().login("lead").get("/agents"); strings.Contains(r.Body, `data-testid="gateway-state"`) {
		t.Error("a server without a runner shows a gateway")
	}
}
