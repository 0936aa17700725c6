package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestPasswordForms: on a person's page an admin gets "Set password" and a person
// gets "Change password" on their own (asking the current one); bad input re-renders
// the form with field errors (422), a form without the CSRF token is refused, anyone
// else gets no form and a 403; the new password signs in and the history shows it.
func TestPasswordForms(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	tess := e.human("tess", "tester")
	tpath := "/agents/" + strconv.FormatInt(tess.ID, 10)
	admin := e.login("ada")

	admin.get(tpath).want(t, http.StatusOK, `data-testid="agent-password-form"`, "Set password", "at least 10 characters")
	if strings.Contains(admin.get(tpath).Body, `name="current_password"`) {
		t.Fatal("an admin is asked for the person's current password")
	}
	r := admin.post(tpath+"/password", url.Values{"password": {"short"}, "password_confirm": {"short"}})
	r.want(t, http.StatusUnprocessableEntity, `data-testid="agent-password-form"`)
	assertFieldError(t, r.Body, "password", "at least 10 characters")
	r = admin.post(tpath+"/password", url.Values{"password": {"reset-by-ada-1"}, "password_confirm": {"reset-by-ada-2"}})
	assertFieldError(t, r.Body, "password_confirm", "does not match")
	if r := admin.do("POST", tpath+"/password", url.Values{"password": {"reset-by-ada-1"}, "password_confirm": {"reset-by-ada-1"}}, nil); r.Status != http.StatusForbidden {
		t.Fatalf("a form without the CSRF token: %d", r.Status)
	}
	admin.post(tpath+"/password", url.Values{"password": {"reset-by-ada-1"}, "password_confirm": {"reset-by-ada-1"}}).want(t, http.StatusSeeOther)
	admin.get(tpath).want(t, http.StatusOK, "Password of tess set.", "password set")

	// The tester signs in with it and changes it, with the current one.
	me := e.browser().signIn("tess", "reset-by-ada-1", "/agents")
	page := me.get(tpath)
	page.want(t, http.StatusOK, "Change password", `name="current_password"`)
	r = me.post(tpath+"/password", url.Values{"current_password": {"not-my-password"}, "password": {"tess-own-choice"}, "password_confirm": {"tess-own-choice"}})
	r.want(t, http.StatusUnprocessableEntity)
	assertFieldError(t, r.Body, "current_password", "does not match")
	if strings.Contains(r.Body, "tess-own-choice") || strings.Contains(r.Body, "not-my-password") {
		t.Fatal("a password is rendered back")
	}
	me.post(tpath+"/password", url.Values{"current_password": {"reset-by-ada-1"}, "password": {"tess-own-choice"}, "password_confirm": {"tess-own-choice"}}).
		want(t, http.StatusSeeOther)
	if a, _ := e.db.GetAgentByName(ctx, "tess"); !a.CheckPassword("tess-own-choice") {
		t.Fatal("the tester's change did not hold")
	}

	// Anyone else: no form, and the service refuses.
	dev := e.login("dev")
	if strings.Contains(dev.get(tpath).Body, "agent-password-form") {
		t.Fatal("a developer is offered another person's password form")
	}
	dev.post(tpath+"/password", url.Values{"password": {"dev-took-it-1"}, "password_confirm": {"dev-took-it-1"}}).want(t, http.StatusForbidden)
	// The tester gets no form on the admin's page.
	ada, _ := e.db.GetAgentByName(ctx, "ada")
	if strings.Contains(me.get("/agents/"+strconv.FormatInt(ada.ID, 10)).Body, "agent-password-form") {
		t.Fatal("the tester is offered the admin's password form")
	}
}
