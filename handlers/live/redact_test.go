package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestStreamHidesAdminAgentFields: while an admin changes a worker's command,
// workdir and pass_env, a tester's /ws session receives the agent.changed event with
// those fields marked hidden and none of their values, live and on replay; an admin's
// session receives them. The pages and the API apply the same rule
// (models.Agent.SeesAdminFields).
func TestStreamHidesAdminAgentFields(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{})
	svc := handlertest.NewService(en.store)
	admin := handlertest.CreateAgent(t, svc, "root", models.KindHuman, "", models.RoleAdmin)
	tester := handlertest.CreateAgent(t, svc, "tess", models.KindHuman, "", "tester")
	worker := handlertest.CreateAgent(t, svc, "w1", models.KindWorker, "", "dev")
	start := en.newest()
	adminWS, testerWS := en.dialAs(admin, ""), en.dialAs(tester, "")

	worker.Command = "run-agent --key SECRET_CMD"
	worker.Workdir = "/srv/SECRET_DIR"
	worker.PassEnv = []string{"SECRET_ENV"}
	if err := svc.Agents.UpdateAgent(context.Background(), admin, worker); err != nil {
		t.Fatal(err)
	}
	changed := en.newest()
	secrets := []string{"SECRET_CMD", "SECRET_DIR", "SECRET_ENV"}

	got := readData(t, testerWS, changed)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Fatalf("the tester's stream carries %s: %s", s, got)
		}
	}
	if !strings.Contains(got, `"command":{"before":null,"after":null,"hidden":true}`) {
		t.Fatalf("the tester's stream does not name the hidden change: %s", got)
	}
	if got := readData(t, adminWS, changed); !strings.Contains(got, "SECRET_CMD") || !strings.Contains(got, "SECRET_ENV") {
		t.Fatalf("the admin's stream lacks the command: %s", got)
	}
	// Replayed from the database, the same rule holds.
	replay := readData(t, en.dialAs(tester, itoa(start)), changed)
	if strings.Contains(replay, "SECRET_CMD") || !strings.Contains(replay, `"hidden":true`) {
		t.Fatalf("the tester's replay: %s", replay)
	}
	if got := readData(t, en.dialAs(admin, itoa(start)), changed); !strings.Contains(got, "SECRET_CMD") {
		t.Fatalf("the admin's replay lacks the command: %s", got)
	}
}

// dialAs connects with a new session of a.
func (en *env) dialAs(a *models.Agent, after string) *websocket.Conn {
	en.t.Helper()
	c, resp, err := en.dial(en.session(a, time.Hour), after, nil)
	if err != nil {
		en.t.Fatalf("dial as %s: %v (%s)", a.Name, err, status(resp))
	}
	en.t.Cleanup(func() { c.Close() })
	return c
}

// readData reads until the event with id want arrived and returns every event's data
// received, joined.
func readData(t testing.TB, c *websocket.Conn, want int64) string {
	t.Helper()
	var all []string
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for last := int64(0); last < want; {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read (up to %d, want %d): %v", last, want, err)
		}
		for _, it := range parse(t, b) {
			if it.Type != "log" {
				all, last = append(all, string(it.Data)), it.ID
			}
		}
	}
	return strings.Join(all, "\n")
}
