package pages_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// admPassword is the password of every agent the admin-page tests create.
const admPassword = "admin pages password"

// pagesLocal is the default ledger: a local hash chain.
var pagesLocal = ledger.Info{Kind: "local"}

// admEnv is the full server (API and dashboard, as cmd builds it) over a fresh SQLite
// database, with a lead+admin ("ada"), an editor ("eve") and a developer ("dev").
type admEnv struct{ *env }

func newAdmEnv(t *testing.T, info ledger.Info) *admEnv {
	t.Helper()
	env := &admEnv{newEnvWith(t, "sqlite", envOptions{ledger: info})}
	env.human("ada", models.RoleLead, models.RoleAdmin)
	env.human("eve", "editor")
	env.human("dev", "developer")
	return env
}

// human creates a human agent with the admin tests' password and no token.
func (e *admEnv) human(name string, roles ...string) *models.Agent {
	e.t.Helper()
	return e.withPassword(name, models.KindHuman, admPassword, roles...)
}

// admClient is a signed-in browser: a cookie jar, no redirect following.
type admClient = browser

// admResp is a response with its body read.
type admResp = page

// login signs name in through the login form and keeps the session's CSRF token,
// read from /templates.
func (e *admEnv) login(name string) *admClient {
	e.t.Helper()
	return e.browser().signIn(name, admPassword, "/templates")
}

// want fails unless r has status and its body contains every string of subs.
func (r page) want(t *testing.T, status int, subs ...string) {
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
// checked checkboxes and textareas of the form in html whose action is action: what a
// browser would submit (without any button). When several forms post to action (the
// rules page's sections), it is the values of all of them, as one post.
func formValues(t *testing.T, html, action string) url.Values {
	t.Helper()
	attr := `action="` + action + `"`
	if !strings.Contains(html, attr) {
		t.Fatalf("no form posting to %s", action)
	}
	v := url.Values{}
	for rest := html; strings.Contains(rest, attr); {
		start := strings.Index(rest, attr)
		end := strings.Index(rest[start:], "</form>")
		for k, vals := range oneFormValues(rest[start : start+end]) {
			v[k] = append(v[k], vals...)
		}
		rest = rest[start+end:]
	}
	return v
}

// oneFormValues is formValues of one form's HTML.
func oneFormValues(f string) url.Values {
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
