package pages_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/pages"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// admPassword is the password of every agent the admin-page tests create.
const admPassword = "admin pages password"

// pagesLocal is the default ledger: a local hash chain.
var pagesLocal = ledger.Info{Kind: "local"}

// admEnv is the full server (API and dashboard, as cmd builds it) over a fresh SQLite
// database, with a lead+admin ("ada"), an editor ("eve") and a developer ("dev").
type admEnv struct {
	t   *testing.T
	db  *store.DB
	svc *models.Service
	srv *httptest.Server
}

func newAdmEnv(t *testing.T, info ledger.Info) *admEnv {
	t.Helper()
	db := storetest.Open(t, "sqlite")
	svc := models.NewService(db, ledger.Composer{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := pages.New(pages.Deps{Service: svc, Log: log, Version: "test", Ledger: info})
	e := handlers.NewServer(handlers.Deps{Service: svc, Log: log, Version: "test", HTML: p.ErrorPage,
		Extra: []func(*echo.Echo){p.Routes}})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	env := &admEnv{t: t, db: db, svc: svc, srv: srv}
	env.human("ada", models.RoleLead, models.RoleAdmin)
	env.human("eve", "editor")
	env.human("dev", "developer")
	return env
}

func (e *admEnv) human(name string, roles ...string) *models.Agent {
	e.t.Helper()
	a := &models.Agent{Name: name, Kind: models.KindHuman, Roles: roles}
	if err := e.svc.CreateAgent(context.Background(), models.System, a, admPassword); err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return a
}

// admClient is a signed-in browser: a cookie jar, no redirect following.
type admClient struct {
	e    *admEnv
	c    *http.Client
	csrf string
}

// admResp is a response with its body read.
type admResp struct {
	Status int
	Body   string
	Header http.Header
}

var admCSRFRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login signs name in through the login form and keeps the session's CSRF token.
func (e *admEnv) login(name string) *admClient {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &admClient{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	form := c.get("/login")
	m := admCSRFRE.FindStringSubmatch(form.Body)
	if m == nil {
		e.t.Fatalf("no CSRF token on the login form: %s", form.Body)
	}
	r := c.do("POST", "/login", url.Values{"name": {name}, "password": {admPassword}, "csrf": {m[1]}})
	if r.Status != http.StatusSeeOther {
		e.t.Fatalf("login %s: %d %s", name, r.Status, r.Body)
	}
	page := c.get("/templates")
	if page.Status != http.StatusOK {
		e.t.Fatalf("after login: GET /templates = %d", page.Status)
	}
	m = admCSRFRE.FindStringSubmatch(page.Body)
	if m == nil {
		e.t.Fatal("no CSRF token on /templates")
	}
	c.csrf = m[1]
	return c
}

func (c *admClient) get(path string) admResp {
	c.e.t.Helper()
	return c.do("GET", path, nil)
}

// post sends form with the session's CSRF token.
func (c *admClient) post(path string, form url.Values) admResp {
	c.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if c.csrf != "" {
		form.Set("csrf", c.csrf)
	}
	return c.do("POST", path, form)
}

func (c *admClient) do(method, path string, form url.Values) admResp {
	c.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.e.srv.URL+path, body)
	if err != nil {
		c.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "text/html")
	res, err := c.c.Do(req)
	if err != nil {
		c.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return admResp{Status: res.StatusCode, Body: string(raw), Header: res.Header}
}

// want fails unless r has status and its body contains every string of subs.
func (r admResp) want(t *testing.T, status int, subs ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body:\n%s", r.Status, status, excerpt(r.Body))
	}
	for _, s := range subs {
		if !strings.Contains(r.Body, s) {
			t.Fatalf("body lacks %q:\n%s", s, excerpt(r.Body))
		}
	}
}

func excerpt(s string) string {
	if i := strings.Index(s, `<main`); i >= 0 {
		s = s[i:]
	}
	if len(s) > 6000 {
		s = s[:6000] + "…"
	}
	return s
}

// formValues collects the values of the named inputs, selects (the selected option),
// checked checkboxes and textareas of the first form in html whose action is action:
// what a browser would submit (without any button).
func formValues(t *testing.T, html, action string) url.Values {
	t.Helper()
	start := strings.Index(html, `action="`+action+`"`)
	if start < 0 {
		t.Fatalf("no form posting to %s", action)
	}
	end := strings.Index(html[start:], "</form>")
	f := html[start : start+end]
	v := url.Values{}
	inputRE := regexp.MustCompile(`<input([^>]*)>`)
	attr := func(tag, name string) (string, bool) {
		m := regexp.MustCompile(`\s` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return "", regexp.MustCompile(`\s` + name + `(\s|/|$)`).MatchString(tag)
		}
		return unescape(m[1]), true
	}
	for _, m := range inputRE.FindAllStringSubmatch(f, -1) {
		tag := m[1]
		name, ok := attr(tag, "name")
		if !ok || name == "" {
			continue
		}
		if _, dis := attr(tag, "disabled"); dis {
			continue
		}
		typ, _ := attr(tag, "type")
		val, _ := attr(tag, "value")
		if typ == "checkbox" {
			if _, on := attr(tag, "checked"); !on {
				continue
			}
		}
		v.Add(name, val)
	}
	taRE := regexp.MustCompile(`(?s)<textarea([^>]*)>(.*?)</textarea>`)
	for _, m := range taRE.FindAllStringSubmatch(f, -1) {
		if name, ok := attr(m[1], "name"); ok {
			v.Add(name, unescape(m[2]))
		}
	}
	selRE := regexp.MustCompile(`(?s)<select([^>]*)>(.*?)</select>`)
	optRE := regexp.MustCompile(`<option value="([^"]*)"( selected)?`)
	for _, m := range selRE.FindAllStringSubmatch(f, -1) {
		name, _ := attr(m[1], "name")
		chosen := ""
		for i, o := range optRE.FindAllStringSubmatch(m[2], -1) {
			if i == 0 || o[2] != "" {
				chosen = unescape(o[1])
			}
			if o[2] != "" {
				break
			}
		}
		v.Add(name, chosen)
	}
	v.Del("csrf")
	return v
}

func unescape(s string) string {
	r := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&amp;", "&")
	return r.Replace(s)
}
