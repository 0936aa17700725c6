package pages

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// Session cookie and lifetime.
const (
	// SessionCookie holds the session secret; only its SHA-256 is stored.
	SessionCookie = models.SessionCookie
	// SessionTTL is how long a session lasts after login (not sliding).
	SessionTTL = 12 * time.Hour
	// CSRFHeader is the request header that may carry the CSRF token instead of the
	// form field components.CSRFFieldName (for scripts).
	CSRFHeader = "X-CSRF-Token"
)

// Context keys of the signed-in agent and the session.
const (
	agentKey   = "pages.agent"
	sessionKey = "pages.session"
)

// requireSession resolves the session cookie to an enabled agent. Without a valid
// session a GET (or HEAD) is redirected to /login?next=<path>, anything else is
// refused with 401 through the central error handler.
func (p *Pages) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		a, s, err := p.session(c)
		if err != nil {
			return err
		}
		if a == nil {
			m := c.Request().Method
			if m == http.MethodGet || m == http.MethodHead {
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return models.Errorf(models.EUNAUTHORIZED, "you are not signed in (or your session expired): sign in again")
		}
		c.Set(agentKey, a)
		c.Set(sessionKey, s)
		return next(c)
	}
}

// session returns the agent and session of the request's cookie, or nils when there
// is none, it expired, or its agent can no longer sign in.
func (p *Pages) session(c echo.Context) (*models.Agent, *models.Session, error) {
	ck, err := c.Cookie(SessionCookie)
	if err != nil {
		return nil, nil, nil
	}
	a, s, err := models.ResolveSession(c.Request().Context(), p.svc.Store(), ck.Value, time.Now())
	if models.ErrorCode(err) == models.EUNAUTHORIZED {
		return nil, nil, nil
	}
	return a, s, err
}

// checkCSRF refuses every POST, PUT, PATCH and DELETE that does not carry the
// session's CSRF token in the form field "csrf" or the X-CSRF-Token header (403).
// It runs after requireSession, so a session is always present.
func (p *Pages) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		want := CSRFToken(c)
		got := c.Request().Header.Get(CSRFHeader)
		if got == "" {
			got = c.FormValue(components.CSRFFieldName)
		}
		if want == "" || !tokensEqual(got, want) {
			return csrfError()
		}
		return next(c)
	}
}

func csrfError() error {
	return models.Forbidden("csrf", "this form is missing its security token or it has expired: go back, reload the page and try again")
}

// tokensEqual compares two tokens in constant time.
func tokensEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// SignedIn returns the signed-in agent of the request (set by requireSession), or
// nil on public pages.
func SignedIn(c echo.Context) *models.Agent {
	a, _ := c.Get(agentKey).(*models.Agent)
	return a
}

// CSRFToken returns the request's session CSRF token, for forms; "" without session.
func CSRFToken(c echo.Context) string {
	s, _ := c.Get(sessionKey).(*models.Session)
	if s == nil {
		return ""
	}
	return s.CSRF
}

// meta returns the layout's page metadata for the signed-in agent: navigation, the
// CSRF token for the logout form, the inbox count, the newest event id (for live.js)
// and the flash message left by the previous request, which it consumes.
func (p *Pages) meta(c echo.Context, title, active string) layout.PageMeta {
	m := layout.PageMeta{Title: title, Active: active, Version: p.d.Version, CSRF: CSRFToken(c)}
	ctx := c.Request().Context()
	if n, err := p.svc.Store().CountInbox(ctx, models.InboxFilter{}); err == nil {
		m.InboxCount = n
	}
	if id, err := p.lastEventID(ctx); err == nil {
		m.LastEventID = id
	}
	if a := SignedIn(c); a != nil {
		m.Agent = &layout.NavAgent{Name: a.Name, Roles: a.Roles}
		if n, ok := c.Get(queueCountKey).(int); ok {
			m.QueueCount = n // the page read the queue already
		} else if n, err := p.queueCount(ctx, a, m.LastEventID); err == nil {
			m.QueueCount = n
		}
	}
	m.FlashKind, m.Flash = takeFlash(c)
	if p.d.Banner != nil {
		m.Banner = p.d.Banner()
	}
	return m
}

// safeNext returns next when it is a same-site path ("/tasks?state=blocked"), else
// "/": a login link can never send the user to another site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	if strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	return next
}
