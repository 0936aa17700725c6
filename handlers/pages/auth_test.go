package pages_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.agent("alice", models.KindHuman, "lead")
	b := e.browser()

	r := b.get("/tasks?state=blocked")
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/login?next="+url.QueryEscape("/tasks?state=blocked") {
		t.Fatalf("no session: %d %q", r.Status, r.Header.Get("Location"))
	}
	form := b.get("/login?next=" + url.QueryEscape("/tasks?state=blocked"))
	if form.Status != 200 || !strings.Contains(form.Body, `data-testid="login-form"`) {
		t.Fatalf("login form: %d", form.Status)
	}
	r = b.do("POST", "/login", url.Values{"name": {"alice"}, "password": {testPassword},
		"csrf": {csrfOf(form.Body)}, "next": {"/tasks?state=blocked"}}, nil)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/tasks?state=blocked" {
		t.Fatalf("login: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	var ck *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "cs_session" {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || ck.Secure || ck.MaxAge != 12*3600 {
		t.Fatalf("session cookie flags: %+v", ck)
	}
	if strings.Contains(r.Header.Get("Set-Cookie"), models.HashSecret(ck.Value)) {
		t.Fatal("cookie holds the stored hash")
	}
	home := b.get("/")
	if home.Status != 200 || !strings.Contains(home.Body, `data-testid="nav-agent">alice<`) {
		t.Fatalf("overview: %d", home.Status)
	}
	b.csrf = csrfOf(home.Body)
	if r := b.post("/logout", nil); r.Status != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.Status)
	}
	if r := b.get("/"); r.Status != http.StatusSeeOther {
		t.Fatalf("after logout: %d", r.Status)
	}
	// The old cookie no longer works even if replayed.
	b2 := e.browser()
	u, _ := url.Parse(e.srv.URL)
	b2.c.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_session", Value: ck.Value}})
	if r := b2.get("/"); r.Status != http.StatusSeeOther {
		t.Fatalf("replayed cookie after logout: %d", r.Status)
	}
}

func TestLoginRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.agent("alice", models.KindHuman, "lead")
	e.agent("bot", models.KindWorker, "developer")
	off := e.agent("carol", models.KindHuman, "exec")
	off.Disabled = true
	if err := e.svc.Agents.UpdateAgent(t.Context(), models.System, off); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, pw string }{
		{"alice", "wrong password!"}, {"nobody", testPassword}, {"bot", testPassword},
		{"carol", testPassword}, {"runner", testPassword}, {"", ""},
	} {
		b := e.browser()
		form := b.get("/login")
		r := b.do("POST", "/login", url.Values{"name": {c.name}, "password": {c.pw}, "csrf": {csrfOf(form.Body)}}, nil)
		if r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "wrong name or password") {
			t.Errorf("%s: status %d", c.name, r.Status)
		}
		if strings.Contains(r.Header.Get("Set-Cookie"), "cs_session=") {
			t.Errorf("%s: got a session", c.name)
		}
	}
	// Without the login form's token the post is refused.
	b := e.browser()
	r := b.do("POST", "/login", url.Values{"name": {"alice"}, "password": {testPassword}}, nil)
	if r.Status != http.StatusForbidden {
		t.Errorf("login without csrf: %d", r.Status)
	}
	// An off-site next is ignored.
	form := b.get("/login")
	r = b.do("POST", "/login", url.Values{"name": {"alice"}, "password": {testPassword}, "csrf": {csrfOf(form.Body)}, "next": {"//evil.example/x"}}, nil)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Errorf("off-site next: %d %q", r.Status, r.Header.Get("Location"))
	}
}

func TestLoginRateLimit(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.agent("alice", models.KindHuman, "lead")
	b := e.browser()
	var last page
	for i := range 12 {
		// A name each time: the per-address limit, not an account's lock, refuses.
		form := b.get("/login")
		last = b.do("POST", "/login", url.Values{"name": {"alice" + strconv.Itoa(i)}, "password": {"nope nope nope"}, "csrf": {csrfOf(form.Body)}}, nil)
	}
	if last.Status != http.StatusTooManyRequests || !strings.Contains(last.Body, "from your address") {
		t.Fatalf("12th failed attempt: %d, want 429 naming the address", last.Status)
	}
}

func TestSessionRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	b := e.browser()
	r := b.do("POST", "/logout", url.Values{}, nil)
	if r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, `data-testid="error-page"`) {
		t.Fatalf("POST without session: %d", r.Status)
	}
	r = b.get("/login?next=" + url.QueryEscape("javascript:alert(1)"))
	if strings.Contains(r.Body, "javascript:") {
		t.Fatal("login form keeps a hostile next")
	}
}
