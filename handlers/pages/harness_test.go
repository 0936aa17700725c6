package pages_test

import (
	"context"
	"github.com/countersign/countersign/runner/drift"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/handlers/pages"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// testPassword is every test agent's password.
const testPassword = "correct horse battery"

// env is a running server (API + dashboard) over a fresh database.
type env struct {
	t      testing.TB
	db     *store.DB
	svc    *models.Service
	pages  *pages.Pages
	echo   *echo.Echo
	srv    *httptest.Server
	agents map[string]*models.Agent
	tokens map[string]string
}

// envOptions change how the test server is built.
type envOptions struct {
	extra  []func(*echo.Echo) // more routes (e.g. /ws)
	ledger ledger.Info        // the ledger the pages describe (zero: none given)
	banner func() string      // the standing warning (nil: none)
	policy func(*models.Agent) []string
	lander models.Lander // merges task branches (nil: none)
	usage  func() (int64, error)
	// gateway reports the runner's model gateway (nil: no runner)
	gateway func() models.GatewayStatus
	// deliverables reads kept files (nil: none)
	deliverables models.DeliverableStore
}

func newEnv(t *testing.T, dialect string) *env { return newEnvWith(t, dialect, envOptions{}) }

func newEnvWith(t *testing.T, dialect string, o envOptions) *env {
	t.Helper()
	db := storetest.Open(t, dialect)
	return newEnvOn(t, db, o)
}

func newEnvOn(t testing.TB, db *store.DB, o envOptions) *env {
	t.Helper()
	svc := handlertest.NewService(db)
	p := pages.New(pages.Deps{Service: svc, Log: handlertest.DiscardLog(), Version: "test", Ledger: o.ledger, Banner: o.banner, SandboxPolicy: o.policy,
		Lander: o.lander, WorkspaceUsage: o.usage, Gateway: o.gateway, Deliverables: o.deliverables, Recheck: drift.NewRechecker(svc.Store(), svc.Tasks, 0, nil)})
	extra := append([]func(*echo.Echo){p.Routes}, o.extra...)
	e, srv := handlertest.Serve(t, handlers.Deps{Service: svc, HTML: p.ErrorPage, Extra: extra})
	return &env{t: t, db: db, svc: svc, pages: p, echo: e, srv: srv, agents: map[string]*models.Agent{}, tokens: map[string]string{}}
}

// agent creates a human (or worker) agent with the test password and a bearer token.
func (e *env) agent(name string, kind models.AgentKind, roles ...string) *models.Agent {
	e.t.Helper()
	a := e.withPassword(name, kind, testPassword, roles...)
	e.agents[name], e.tokens[name] = a, handlertest.CreateToken(e.t, e.svc, name, "test")
	return a
}

// fixtureHashes holds, per fixture password, one bcrypt hash of it at bcrypt.MinCost.
var fixtureHashes sync.Map

// fixtureHash returns a bcrypt hash of password at bcrypt.MinCost, made once per
// password and test binary. Under -race a hash at the production cost
// (bcrypt.DefaultCost) takes one to two seconds to make and as long to check, and the
// tests make hundreds: the login checks the tests exercise are the same bcrypt
// comparison at a lower cost.
func fixtureHash(t testing.TB, password string) string {
	t.Helper()
	if len(password) < models.MinPasswordLength {
		t.Fatalf("fixture password %q is shorter than %d characters", password, models.MinPasswordLength)
	}
	if h, ok := fixtureHashes.Load(password); ok {
		return h.(string)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fixtureHashes.LoadOrStore(password, string(h))
	return got.(string)
}

// withPassword creates an agent through the service, as the system (the same checks
// and agent.created event as handlertest.CreateAgent), then stores fixtureHash of
// password as its password hash directly in the store (no event), so that it signs
// in with password. See fixtureHash for why the service does not hash it.
func (e *env) withPassword(name string, kind models.AgentKind, password string, roles ...string) *models.Agent {
	e.t.Helper()
	a := handlertest.CreateAgent(e.t, e.svc, name, kind, "", roles...)
	a.PasswordHash = fixtureHash(e.t, password)
	if err := e.db.UpdateAgent(context.Background(), a); err != nil {
		e.t.Fatalf("password of agent %s: %v", name, err)
	}
	if !a.CheckPassword(password) {
		e.t.Fatalf("agent %s does not accept its fixture password", name)
	}
	return a
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// page is a response with its body read.
type page struct {
	Status int
	Body   string
	Header http.Header
}

func (b *browser) get(path string) page {
	b.e.t.Helper()
	return b.do("GET", path, nil, nil)
}

// do sends a request; form values are sent urlencoded.
func (b *browser) do(method, path string, form url.Values, hdr map[string]string) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "text/html")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{Status: res.StatusCode, Body: string(raw), Header: res.Header}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token of the first form in html.
func csrfOf(html string) string {
	m := csrfRE.FindStringSubmatch(html)
	if m == nil {
		return ""
	}
	return m[1]
}

// login signs in as name with the test password and remembers the session's CSRF
// token, read from the overview.
func (b *browser) login(name string) *browser { return b.signIn(name, testPassword, "/") }

// signIn signs in as name with password through the login form, then loads landing
// (which must answer 200 with a form) and remembers the session's CSRF token.
func (b *browser) signIn(name, password, landing string) *browser {
	b.e.t.Helper()
	form := b.get("/login")
	tok := csrfOf(form.Body)
	if tok == "" {
		b.e.t.Fatalf("no CSRF token on the login form: %s", form.Body)
	}
	r := b.do("POST", "/login", url.Values{"name": {name}, "password": {password}, "csrf": {tok}}, nil)
	if r.Status != http.StatusSeeOther {
		b.e.t.Fatalf("login %s: status %d: %s", name, r.Status, r.Body)
	}
	home := b.get(landing)
	if home.Status != http.StatusOK {
		b.e.t.Fatalf("after login: GET %s = %d", landing, home.Status)
	}
	b.csrf = csrfOf(home.Body)
	if b.csrf == "" {
		b.e.t.Fatalf("no CSRF token on %s", landing)
	}
	return b
}

// post sends a form with the session's CSRF token.
func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.do("POST", path, form, nil)
}

// eventCount is the number of events stored: a refused request changes nothing.
func (e *env) eventCount() int {
	e.t.Helper()
	return handlertest.EventCount(e.t, e.db)
}
