package handlers_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestPasswordAPI: PUT /agents/{name}/password lets an admin set a human's password
// and the human change their own with the current one; anyone else is 403, a short or
// wrong password 422 naming the field, a worker 422; the password then signs in.
func TestPasswordAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, models.RoleAdmin)
		e.agent("lee", models.KindHuman, models.RoleLead)
		e.agent("tess", models.KindHuman, "tester")
		e.agent("bot", models.KindWorker, "developer")

		e.must(204, "ada", "PUT", "/agents/tess/password", map[string]any{"password": "set-by-the-admin"})
		if r := e.do("ada", "PUT", "/agents/tess/password", map[string]any{"password": "short"}); r.Status != 422 || r.fields()["password"] == nil {
			t.Fatalf("a short password: %d %s", r.Status, r.Raw)
		}
		if r := e.do("lee", "PUT", "/agents/tess/password", map[string]any{"password": "set-by-the-lead"}); r.Status != 403 {
			t.Fatalf("the lead set the tester's password: %d %s", r.Status, r.Raw)
		}
		if r := e.do("tess", "PUT", "/agents/tess/password", map[string]any{"password": "changed-by-tess", "current_password": "wrong-one-here"}); r.Status != 422 || r.fields()["current_password"] == nil {
			t.Fatalf("a wrong current password: %d %s", r.Status, r.Raw)
		}
		e.must(204, "tess", "PUT", "/agents/tess/password", map[string]any{"password": "changed-by-tess", "current_password": "set-by-the-admin"})
		if r := e.do("ada", "PUT", "/agents/bot/password", map[string]any{"password": "a-worker-password"}); r.Status != 422 {
			t.Fatalf("a worker's password: %d %s", r.Status, r.Raw)
		}
		e.must(404, "ada", "PUT", "/agents/nobody/password", map[string]any{"password": "set-by-the-admin"})
		a, err := e.svc.Store().GetAgentByName(context.Background(), "tess")
		if err != nil || !a.CheckPassword("changed-by-tess") {
			t.Fatalf("tess's password did not hold: %v", err)
		}
	})
}
