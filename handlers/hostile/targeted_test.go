package hostile_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// admin is the admin identity (the last one).
func (r *run) admin() identity { return r.e.ids[len(r.e.ids)-1] }

// expect sends q and fails unless the answer has status want and, when field is
// set, names field (in the JSON error's fields, or anywhere in an HTML page).
func (r *run) expect(q req, want int, field string) reply {
	r.e.t.Helper()
	rep := r.send(q)
	if rep.status != want {
		r.e.t.Errorf("%s: %d, want %d: %s", describe(q), rep.status, want, clip(rep.body))
		return rep
	}
	if field != "" && !strings.Contains(string(rep.body), field) {
		r.e.t.Errorf("%s: the answer does not name %s: %s", describe(q), field, clip(rep.body))
	}
	return rep
}

// passwords: a password over bcrypt's 72 bytes, of generated lengths and alphabets,
// is a field error from the API and from the add-agent form; at sign-in it is only a
// wrong password.
func (r *run) passwords() {
	alphabets := []string{"a", "é", "€", "😀", "x y"}
	for i := range 6 {
		r.g.marker = r.nextMarker()
		a := alphabets[r.g.r.IntN(len(alphabets))]
		pw := r.g.marker + strings.Repeat(a, 73/len(a)+1+r.g.r.IntN(60))
		body := fmt.Sprintf(`{"name":%q,"kind":"human","roles":["developer"],"password":%q}`, fmt.Sprintf("pw%d%s", i, r.e.dialect[:2]), pw)
		r.expect(req{method: "POST", path: "/api/v1/agents", body: body, contentType: "application/json", id: r.admin()}, 422, `"password"`)
		form := url.Values{"csrf": {r.admin().csrf}, "name": {fmt.Sprintf("pwf%d%s", i, r.e.dialect[:2])}, "kind": {"human"},
			"roles": {"developer"}, "password": {pw}}
		r.expect(req{method: "POST", path: "/agents", body: form.Encode(), contentType: "application/x-www-form-urlencoded", id: r.admin()}, 422, "72 bytes")
		if i == 0 { // bcrypt is slow on purpose: one sign-in shows it
			r.loginAs("root", pw, 401)
		}
	}
}

// workdirs: a worker's workdir that is relative, climbs with "..", is "/" or holds
// NUL is refused naming workdir, on create and on change, from the API and the form.
func (r *run) workdirs() {
	bad := []string{"../../../etc", "relative/dir", "/srv/../etc", "/srv/./x", "/", "/srv/a\x00b", "/srv/\xff", "//"}
	for i, w := range bad {
		r.g.marker = r.nextMarker()
		w += "/" + r.g.marker
		if i == 4 || i == 7 {
			w = strings.TrimSuffix(w, "/"+r.g.marker) // "/" and "//" themselves
		}
		body := fmt.Sprintf(`{"name":"wd%d%s","kind":"worker","command":"true","roles":["developer"],"workdir":%s}`, i, r.e.dialect[:2], jsonString(w))
		r.expect(req{method: "POST", path: "/api/v1/agents", body: body, contentType: "application/json", id: r.admin()}, 422, "workdir")
		r.expect(req{method: "PATCH", path: "/api/v1/agents/bot", body: `{"workdir":` + jsonString(w) + `}`, contentType: "application/json", id: r.admin()}, 422, "workdir")
		form := url.Values{"csrf": {r.admin().csrf}, "roles": {"developer"}, "command": {"true"}, "workdir": {w}, "concurrency": {"1"}}
		r.expect(req{method: "POST", path: "/agents/" + itoa(r.botID()), body: form.Encode(), contentType: "application/x-www-form-urlencoded",
			id: r.admin(), unstorable: !utf8OK(w)}, 422, "workdir")
	}
}

// botID is the worker agent's id.
func (r *run) botID() int64 {
	a, err := r.e.db.GetAgentByName(context.Background(), "bot")
	if err != nil {
		r.e.t.Fatal(err)
	}
	return a.ID
}

// numbers: generated numbers out of their column's range in path and query are 422
// (or 404 for an id that names nothing), never a database error.
func (r *run) numbers() {
	for _, n := range hugeNumbers {
		r.g.marker = r.nextMarker()
		rep := r.send(req{method: "GET", path: "/api/v1/templates/" + r.g.marker, query: "version=" + url.QueryEscape(n), id: r.admin()})
		if rep.status != 422 && rep.status != 404 {
			r.e.t.Errorf("version=%s: %d %s", n, rep.status, clip(rep.body))
		}
		for _, p := range []string{"/api/v1/tasks/", "/api/v1/goals/", "/tasks/", "/goals/", "/api/v1/ledger/", "/agents/"} {
			r.send(req{method: "GET", path: p + url.PathEscape(n), query: "limit=" + url.QueryEscape(n) + "&after=" + url.QueryEscape(n), id: r.admin()})
		}
	}
	r.expect(req{method: "GET", path: "/api/v1/templates/x", query: "version=9223372036854775807", id: r.admin()}, 422, "version")
}

var loginCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// loginAs signs in through the form with a valid login CSRF token and wants status.
func (r *run) loginAs(name, password string, want int) {
	r.e.t.Helper()
	res, err := r.client.Get(r.e.srv.URL + "/login")
	if err != nil {
		r.e.t.Fatal(err)
	}
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(res))
	m := loginCSRF.FindStringSubmatch(b.String())
	if m == nil {
		r.e.t.Fatalf("no CSRF token on the login form")
	}
	var ck string
	for _, c := range res.Cookies() {
		if c.Name == "cs_login" {
			ck = c.Value
		}
	}
	form := url.Values{"csrf": {m[1]}, "name": {name}, "password": {password}}
	r.expect(req{method: "POST", path: "/login", body: form.Encode(), contentType: "application/x-www-form-urlencoded",
		header: http.Header{"Cookie": {"cs_login=" + ck}}, unstorable: !utf8OK(name) || !utf8OK(password)}, want, "")
}

// login: a NUL or invalid UTF-8 in the name or password, with a valid CSRF token, is
// refused before anything is looked up.
func (r *run) login() {
	for _, c := range []class{classNUL, classBadUTF8, classNUL} {
		r.g.marker = r.nextMarker()
		r.loginAs(r.g.text(c), "whatever password", 422)
		r.loginAs("root", r.g.text(c), 422)
	}
}

// static: missing, traversing and malformed static paths and ranges are HTML 4xx.
func (r *run) static() {
	for _, p := range []string{"/static/nope.css", "/static/", "/static/..%2f..%2fgo.mod", "/static/app.css%00", "/static/%ff", "/static/app.css/"} {
		r.g.marker = r.nextMarker()
		r.send(req{method: "GET", path: p, id: r.e.ids[0]})
	}
	rep := r.send(req{method: "GET", path: "/static/app.css", header: http.Header{"Range": {"bytes=99999999-"}}, id: r.e.ids[0]})
	if rep.status < 400 {
		r.e.t.Errorf("an unsatisfiable range: %d", rep.status)
	}
}

// upgrades: WebSocket handshakes with bad versions, keys and methods are refused in
// the error shape, signed in or not.
func (r *run) upgrades() {
	versions := []string{"12", "", "abc", "8, 7", "13\x00", "99999999999999999999"}
	keys := []string{"", "short", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, id := range []identity{r.e.ids[0], r.admin()} {
		for _, v := range versions {
			for _, k := range keys {
				r.g.marker = r.nextMarker()
				h := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Key": {k}}
				if v != "" {
					h["Sec-Websocket-Version"] = []string{strings.ReplaceAll(v, "\x00", "")}
				}
				if k == keys[2] && v == "13\x00" {
					continue // a NUL cannot be sent in a header: this handshake would be right
				}
				rep := r.send(req{method: "GET", path: "/ws", header: h, id: id})
				if rep.status < 400 {
					r.e.t.Errorf("a bad upgrade (version %q, key %q) as %s: %d", v, k, id.name, rep.status)
				}
			}
		}
	}
}

// chunked: a body over the limit sent without a length is 413 on every route family,
// as a form, JSON or an MCP call.
func (r *run) chunked() {
	big := strings.Repeat("x", 2<<20+32<<10)
	admin := r.admin()
	for _, tc := range []struct{ method, path, ct string }{
		{"POST", "/login", "application/x-www-form-urlencoded"},
		{"POST", "/goals", "application/x-www-form-urlencoded"},
		{"POST", "/agents", "multipart/form-data; boundary=zz"},
		{"POST", "/webhooks", "application/x-www-form-urlencoded"},
		{"POST", "/logout", "application/x-www-form-urlencoded"},
		{"POST", "/api/v1/goals", "application/json"},
		{"POST", "/api/v1/tasks/1/start", "application/json"},
		{"POST", "/mcp", "application/json"},
		{"GET", "/api/v1/tasks", "text/plain"},
		{"GET", "/metrics", "text/plain"},
		{"GET", "/static/app.css", "text/plain"},
	} {
		r.g.marker = r.nextMarker()
		body := "a=" + r.g.marker + big
		if strings.HasSuffix(tc.ct, "json") {
			body = `{"title":"` + r.g.marker + big + `"}`
		}
		r.expect(req{method: tc.method, path: tc.path, body: body, contentType: tc.ct, id: admin, chunked: true,
			header: http.Header{"X-Csrf-Token": {admin.csrf}}}, 413, "")
	}
}

// cancelled: every GET route, its parameters naming the seeded goal and task, served
// with a context already cancelled (the client went away), answers no 5xx and logs
// no error; then real requests whose clients give up after a few milliseconds.
func (r *run) cancelled() {
	admin := r.admin()
	for _, rt := range r.e.echo.Routes() {
		if rt.Method != http.MethodGet || rt.Path == "/ws" {
			continue
		}
		p := paramRE.ReplaceAllStringFunc(rt.Path, func(s string) string {
			switch s {
			case ":id":
				return itoa(r.e.taskID)
			case "*":
				return "app.css"
			}
			return "root"
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		hr := httptest.NewRequestWithContext(ctx, "GET", p, nil)
		hr.Header.Set("Authorization", "Bearer "+admin.bearer)
		hr.AddCookie(&http.Cookie{Name: models.SessionCookie, Value: admin.cookie})
		rec := httptest.NewRecorder()
		r.e.echo.ServeHTTP(rec, hr)
		r.n++
		if rec.Code >= 500 && rec.Code != 499 {
			r.e.t.Errorf("GET %s with the client gone: %d %s", p, rec.Code, clip(rec.Body.Bytes()))
		}
	}
	for i := range 40 {
		p := []string{"/api/v1/tasks", "/api/v1/goals", "/metrics", "/api/v1/events", "/tasks", "/"}[i%6]
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.g.r.IntN(3000))*time.Microsecond)
		hr, _ := http.NewRequestWithContext(ctx, "GET", r.e.srv.URL+p, nil)
		hr.Header.Set("Authorization", "Bearer "+admin.bearer)
		hr.AddCookie(&http.Cookie{Name: models.SessionCookie, Value: admin.cookie})
		if res, err := r.client.Do(hr); err == nil {
			readAll(res)
			if res.StatusCode >= 500 {
				r.e.t.Errorf("GET %s: %d", p, res.StatusCode)
			}
		}
		cancel()
		r.n++
	}
	time.Sleep(50 * time.Millisecond) // the server finishes the requests it was left with
}

func readAll(res *http.Response) string {
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// utf8OK reports whether s is text every database holds: UTF-8 without NUL.
func utf8OK(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }
