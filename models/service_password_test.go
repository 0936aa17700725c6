package models_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestSetPassword: an admin sets and resets a human's password (lifting a sign-in
// lockout), a human changes their own only with their current password, nobody else
// sets one, a worker has none, the length rule holds, and each set is an
// agent.password_set event without the password.
func TestSetPassword(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		tess := e.agent(&models.Agent{Name: "tess", Kind: models.KindHuman, Roles: []string{"tester"}})
		code := func(err error) string { return models.ErrorCode(err) }
		field := func(err error, f string) string {
			if me, ok := err.(*models.Error); ok {
				return me.Fields[f]
			}
			return ""
		}
		// An admin sets it; the tester signs in with it, after a lockout is lifted.
		e.must(e.db.LockLogin(e.ctx, "tess", e.now.Add(time.Hour)))
		e.must(e.svc.Agents.SetPassword(e.ctx, e.admin, "tess", "", "first-password-1"))
		if !e.reload("tess").CheckPassword("first-password-1") {
			t.Fatal("the admin's password does not sign the tester in")
		}
		if _, err := e.db.GetLoginFailures(e.ctx, "tess"); code(err) != models.ENOTFOUND {
			t.Fatalf("the lockout stayed: %v", err)
		}
		// The length rule: one place, MinPasswordLength.
		err := e.svc.Agents.SetPassword(e.ctx, e.admin, "tess", "", "short")
		if code(err) != models.EINVALID || !strings.Contains(field(err, "password"), "at least 10") {
			t.Fatalf("a short password: %v", err)
		}
		// The tester changes their own, with the current password only.
		err = e.svc.Agents.SetPassword(e.ctx, tess, "tess", "wrong-password", "second-password-2")
		if code(err) != models.EINVALID || field(err, "current_password") == "" {
			t.Fatalf("a wrong current password: %v", err)
		}
		e.must(e.svc.Agents.SetPassword(e.ctx, tess, "tess", "first-password-1", "second-password-2"))
		if !e.reload("tess").CheckPassword("second-password-2") {
			t.Fatal("the tester's own change did not hold")
		}
		// Nobody else: not the lead, not the tester for the admin.
		if err := e.svc.Agents.SetPassword(e.ctx, e.lead, "tess", "", "third-password-3"); code(err) != models.EFORBIDDEN {
			t.Fatalf("the lead set the tester's password: %v", err)
		}
		if err := e.svc.Agents.SetPassword(e.ctx, tess, "ada", "", "third-password-3"); code(err) != models.EFORBIDDEN {
			t.Fatalf("the tester set the admin's password: %v", err)
		}
		if err := e.svc.Agents.SetPassword(e.ctx, e.admin, "bot", "", "third-password-3"); code(err) != models.EINVALID {
			t.Fatalf("a worker got a password: %v", err)
		}
		// Two events, naming who set it, never the password.
		evs, err := e.db.ListEvents(e.ctx, 0, 1000)
		e.must(err)
		var sets []string
		for _, ev := range evs {
			if ev.Type == models.AgentPasswordSet {
				sets = append(sets, string(ev.Data))
			}
			if strings.Contains(string(ev.Data), "password-") {
				t.Fatalf("an event carries the password: %s", ev.Data)
			}
		}
		if len(sets) != 2 || !strings.Contains(sets[0], `"by":"ada"`) || !strings.Contains(sets[1], `"own":true`) {
			t.Fatalf("password events: %v", sets)
		}
	})
}

func (e *accessEnv) reload(name string) *models.Agent {
	e.t.Helper()
	a, err := e.db.GetAgentByName(e.ctx, name)
	e.must(err)
	return a
}
