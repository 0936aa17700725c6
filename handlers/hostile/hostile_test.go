package hostile_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/handlers/internal/handlertest"
)

// roundsPerRoute is how many generated requests each route gets per identity.
const roundsPerRoute = 5

// run is one dialect's hostile session: what was sent, what was refused.
type run struct {
	e       *env
	g       *gen
	n       int               // requests sent
	m       int               // markers made
	refused map[string]string // marker → the refused request that carried it
	client  *http.Client
}

// TestHostileInput sends generated hostile requests (NUL, invalid UTF-8, overlong
// text, out-of-range and malformed numbers, path traversal, markup; in path
// parameters, query values, JSON, forms and MCP calls) to every registered route as
// each identity, then the targeted classes (long passwords, workdirs, chunked
// oversize bodies, cancelled requests, bad WebSocket upgrades, static files, the
// login form): no answer is 5xx, no error is logged, every error answer is in the
// route's error shape, a request carrying unstorable text in its path, query or form
// is refused, and the database holds no marker of a refused request and no text it
// cannot hold on both databases.
func TestHostileInput(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		baseline := e.dump()
		r := &run{e: e, g: &gen{r: rand.New(rand.NewPCG(37, uint64(len(dialect))))}, refused: map[string]string{},
			client: &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		start := time.Now()
		for _, phase := range []struct {
			name string
			f    func()
		}{{"routes", r.routes}, {"passwords", r.passwords}, {"workdirs", r.workdirs}, {"numbers", r.numbers}, {"login", r.login},
			{"static", r.static}, {"upgrades", r.upgrades}, {"chunked", r.chunked}, {"cancelled", r.cancelled}} {
			n, t0 := r.n, time.Now()
			phase.f()
			t.Logf("%s: %d requests in %v", phase.name, r.n-n, time.Since(t0).Round(time.Millisecond))
		}
		t.Logf("%s: %d requests in %v", dialect, r.n, time.Since(start).Round(time.Millisecond))
		after := e.dump()
		for marker, what := range r.refused {
			if strings.Contains(after, marker) {
				t.Errorf("the database holds what a refused request carried: %s", what)
			}
		}
		if utf8.ValidString(baseline) && !strings.Contains(baseline, "\x00") && (!utf8.ValidString(after) || strings.Contains(after, "\x00")) {
			t.Errorf("the database holds text that is not UTF-8 or holds NUL")
		}
		for _, m := range first(e.errs.take(), 10) {
			t.Errorf("logged at error level: %s", m)
		}
	})
}

// req is one request to send.
type req struct {
	method, path, query string
	body                string
	contentType         string
	id                  identity
	header              http.Header
	unstorable          bool // carries unstorable text where the boundary reads it
	chunked             bool // send the body without a length
}

// reply is what came back.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends q, checks the answer (no 5xx, the error shape, a refusal for unstorable
// text) and records the marker of a refused request.
func (r *run) send(q req) reply {
	r.e.t.Helper()
	r.n++
	u := r.e.srv.URL + q.path
	if q.query != "" {
		u += "?" + q.query
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
		if q.chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
	}
	hr, err := http.NewRequest(q.method, u, body)
	if err != nil {
		r.e.t.Fatalf("%s %s: %v", q.method, u, err)
	}
	for k, v := range q.header {
		hr.Header[k] = v
	}
	if q.contentType != "" {
		hr.Header.Set("Content-Type", q.contentType)
	}
	if q.id.bearer != "" {
		hr.Header.Set("Authorization", "Bearer "+q.id.bearer)
	}
	if q.id.cookie != "" {
		hr.AddCookie(&http.Cookie{Name: "cs_session", Value: q.id.cookie})
	}
	res, err := r.client.Do(hr)
	if err != nil {
		r.e.t.Errorf("%s: %v", describe(q), err)
		return reply{}
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	rep := reply{status: res.StatusCode, header: res.Header, body: b}
	r.check(q, rep)
	return rep
}

// check applies the checks every answer must pass.
func (r *run) check(q req, rep reply) {
	t := r.e.t
	t.Helper()
	if rep.status >= 500 {
		t.Errorf("%s: %d %s", describe(q), rep.status, clip(rep.body))
		return
	}
	if q.unstorable && rep.status < 400 {
		t.Errorf("%s: unstorable text accepted: %d %s", describe(q), rep.status, clip(rep.body))
	}
	if msg := shapeProblem(q, rep); msg != "" {
		t.Errorf("%s: %d not in the error shape (%s): %s %s", describe(q), rep.status, msg, rep.header.Get("Content-Type"), clip(rep.body))
	}
	if rep.status >= 400 && !(q.path == "/login" && (rep.status == 401 || rep.status == 429)) {
		// A failed sign-in is counted under the name tried, by design (lockout).
		r.refused[r.g.marker] = describe(q) + fmt.Sprintf(" → %d", rep.status)
	}
}

// shapeProblem says how an error answer is outside its route's error shape: the API
// answers {"error": {code, message}}, /mcp a JSON-RPC error, pages an HTML page; /ws
// and /metrics either JSON or HTML. "" for success and for a HEAD (no body).
func shapeProblem(q req, rep reply) string {
	if rep.status < 400 || q.method == http.MethodHead {
		return ""
	}
	var v struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	jsonErr := json.Unmarshal(rep.body, &v)
	ct := rep.header.Get("Content-Type")
	isAPI := jsonErr == nil && strings.HasPrefix(ct, "application/json") && v.Error.Message != ""
	code, _ := v.Error.Code.(string)
	isAPI = isAPI && code != ""
	isHTML := strings.HasPrefix(ct, "text/html") && strings.Contains(strings.ToLower(string(rep.body)), "<html")
	switch p := q.path; {
	case strings.HasPrefix(p, "/api/"):
		if !isAPI {
			return "want the API's JSON error"
		}
	case p == "/mcp" || strings.HasPrefix(p, "/mcp/"):
		if _, num := v.Error.Code.(float64); jsonErr != nil || v.JSONRPC != "2.0" || !num || v.Error.Message == "" {
			return "want a JSON-RPC error"
		}
	case p == "/ws" || p == "/metrics":
		if !isAPI && !isHTML {
			return "want a JSON error or an HTML page"
		}
	default:
		if !isHTML {
			return "want an HTML page"
		}
	}
	return ""
}

var paramRE = regexp.MustCompile(`:[a-z_]+|\*`)

// routes sends roundsPerRoute generated requests to every registered route (but
// sign-out, which would end the admin's session) as each identity.
func (r *run) routes() {
	seen := map[string]bool{}
	var list [][2]string
	for _, rt := range r.e.echo.Routes() {
		k := rt.Method + " " + rt.Path
		if seen[k] || rt.Path == "/logout" || rt.Method == http.MethodConnect || strings.HasPrefix(rt.Method, "echo_") {
			continue
		}
		seen[k] = true
		list = append(list, [2]string{rt.Method, rt.Path})
	}
	sort.Slice(list, func(i, j int) bool { return list[i][1]+list[i][0] < list[j][1]+list[j][0] })
	if len(list) < 100 {
		r.e.t.Fatalf("only %d routes registered: the server under test is not the whole product", len(list))
	}
	for _, rt := range list {
		for _, id := range r.e.ids {
			for range roundsPerRoute {
				r.send(r.generated(rt[0], rt[1], id))
			}
		}
	}
}

// generated is a request to the route (method, pattern) as id with hostile path
// parameters, query and (for writes) body.
func (r *run) generated(method, pattern string, id identity) req {
	r.g.marker = r.nextMarker()
	q := req{method: method, id: id}
	q.path = paramRE.ReplaceAllStringFunc(pattern, func(p string) string {
		ok := ""
		if p == ":name" && strings.Contains(pattern, "/templates/") {
			ok = "seed"
		}
		if p == ":id" && !strings.Contains(pattern, "/agents/") && !strings.Contains(pattern, "/tokens/") {
			ok = itoa(r.e.taskID)
			if strings.HasPrefix(pattern, "/goals") || strings.HasPrefix(pattern, "/api/v1/goals") {
				ok = itoa(r.e.goalID)
			}
		}
		v, bad := r.g.param(strings.TrimPrefix(p, ":"), ok)
		q.unstorable = q.unstorable || bad
		return url.PathEscape(v)
	})
	if r.g.r.IntN(2) == 0 {
		var bad bool
		q.query, bad = r.g.query()
		q.unstorable = q.unstorable || bad
	}
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return q
	}
	api := strings.HasPrefix(pattern, "/api/") || pattern == "/mcp"
	var bad bool
	if api && r.g.r.IntN(8) > 0 {
		key := pattern
		if pattern == "/mcp" {
			key = mcpTools[r.g.r.IntN(len(mcpTools))]
		}
		// bad only for the bodies whose fields the route reads: another body may be
		// refused for its unknown field or not read at all.
		q.body, bad = r.g.jsonBody(key)
		q.unstorable = q.unstorable || bad
		q.contentType = "application/json"
		if pattern == "/mcp" {
			q.body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, key, q.body)
			q.header = http.Header{"Accept": {"application/json, text/event-stream"}}
		}
		return q
	}
	q.body, q.contentType, bad = r.g.form(pattern, id.csrf)
	q.unstorable = q.unstorable || bad
	return q
}

// mcpTools are tools the generated /mcp calls name.
var mcpTools = []string{"create_goal", "create_task", "update_task", "submit_for_review", "approve_task", "reject_task",
	"ask_question", "answer_question", "reopen_task", "reject_goal", "link_task_to_goal", "inbox_list", "no_such_tool"}

// nextMarker is a string no request but this one carries.
func (r *run) nextMarker() string {
	r.m++
	return fmt.Sprintf("hx%s%06dq", r.e.dialect[:2], r.m)
}

// describe names a request in a failure message, its body clipped.
func describe(q req) string {
	return fmt.Sprintf("%s as %s %s?%s [%s] %s", q.method, q.id.name, clip([]byte(q.path)), clip([]byte(q.query)), q.contentType, clip([]byte(q.body)))
}

func clip(b []byte) string {
	if len(b) > 160 {
		return fmt.Sprintf("%q…(%d bytes)", b[:160], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }
