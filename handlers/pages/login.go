package pages

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/pages/login"
)

// loginCookie carries the pre-session CSRF token of the login form (double submit):
// a login form posted from another site lacks it, so nobody can be signed in to an
// account of the attacker's choosing.
const loginCookie = "cs_login"

// dummyHash is compared against when the name is unknown, so that a wrong name and a
// wrong password take about the same time. It is the bcrypt hash, at
// bcrypt.DefaultCost like every password (see Service.SetPassword), of a password
// nobody has; it is a constant because computing it at package initialisation cost
// every process start, CLI calls included, some 60 ms.
const dummyHash = "$2a$10$JgMC1q047xxQEZWHplCjOun9gnlyoolu8hRnnkeo76w.1NmtA.cLu"

// wrongLogin is the one message for every refused login: it does not tell which part
// was wrong or whether the agent exists.
const wrongLogin = "wrong name or password"

// loginForm answers GET /login; a signed-in visitor goes straight on.
func (p *Pages) loginForm(c echo.Context) error {
	if a, _, err := p.session(c); err == nil && a != nil {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	return p.renderLogin(c, http.StatusOK, login.View{Next: safeNext(c.QueryParam("next"))})
}

// renderLogin renders the login page with the login CSRF token: the browser's
// current one if it has one, so that a second tab (or a favicon request redirected
// here) does not invalidate the form already shown, else a fresh one.
func (p *Pages) renderLogin(c echo.Context, status int, v login.View) error {
	tok := ""
	if ck, err := c.Cookie(loginCookie); err == nil && len(ck.Value) >= 32 && len(ck.Value) <= 64 {
		tok = ck.Value
	} else {
		tok = models.NewSecret("")
	}
	c.SetCookie(&http.Cookie{Name: loginCookie, Value: tok, Path: "/login", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: p.secure(c), MaxAge: 3600})
	v.CSRF = tok
	v.Meta.Title, v.Meta.Version = "Sign in", p.d.Version
	if v.Error != "" {
		v.Meta.Flash, v.Meta.FlashKind = v.Error, components.FlashError
	}
	return render(c, status, login.Page(v))
}

// login answers POST /login with name, password, csrf and next.
func (p *Pages) login(c echo.Context) error {
	ck, err := c.Cookie(loginCookie)
	if err != nil || !tokensEqual(c.FormValue(components.CSRFFieldName), ck.Value) {
		return csrfError()
	}
	name := strings.ToLower(strings.TrimSpace(c.FormValue("name")))
	v := login.View{Name: name, Next: safeNext(c.FormValue("next"))}
	ctx := c.Request().Context()
	// A locked account is refused before its password is looked at, so the answer
	// tells nothing about the password (and costs the address no attempt).
	if until, err := p.svc.Tokens.LoginLockedUntil(ctx, name); err != nil {
		return err
	} else if !until.IsZero() {
		return p.renderLocked(c, v, until)
	}
	if !p.limiter.allow(clientIP(c)) {
		v.Error = "too many sign-in attempts from your address: wait a minute and try again"
		return p.renderLogin(c, http.StatusTooManyRequests, v)
	}
	a, err := p.svc.Store().GetAgentByName(ctx, name)
	if err != nil && models.ErrorCode(err) != models.ENOTFOUND {
		return err
	}
	ok := false
	if a != nil && a.PasswordHash != "" {
		ok = a.CheckPassword(c.FormValue("password"))
	} else {
		_ = bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(c.FormValue("password")))
	}
	if !ok || !a.CanSignIn() {
		if until, err := p.svc.Tokens.LoginFailed(ctx, name); err != nil {
			return err
		} else if !until.IsZero() {
			p.d.Log.Warn("dashboard account locked after failed sign-ins", "name", name, "until", until)
			return p.renderLocked(c, v, until)
		}
		v.Error = wrongLogin
		return p.renderLogin(c, http.StatusUnauthorized, v)
	}
	if err := p.svc.Tokens.LoginSucceeded(ctx, name); err != nil {
		return err
	}
	p.limiter.forgive(clientIP(c))
	secret := models.NewSecret("")
	now := time.Now().UTC()
	s := &models.Session{ID: models.HashSecret(secret), AgentID: a.ID, CSRF: models.NewSecret(""),
		CreatedAt: now, ExpiresAt: now.Add(SessionTTL)}
	if err := p.svc.Store().CreateSession(ctx, s); err != nil {
		return err
	}
	c.SetCookie(p.sessionCookie(c, secret, int(SessionTTL/time.Second)))
	c.SetCookie(&http.Cookie{Name: loginCookie, Value: "", Path: "/login", MaxAge: -1, HttpOnly: true})
	p.d.Log.Info("dashboard sign-in", "agent", a.Name)
	return c.Redirect(http.StatusSeeOther, v.Next)
}

// renderLocked answers a sign-in to an account locked until until (429): the same
// for every password, and for names that are no agent's.
func (p *Pages) renderLocked(c echo.Context, v login.View, until time.Time) error {
	mins := int(until.Sub(p.svc.Now()).Round(time.Minute) / time.Minute)
	v.Error = fmt.Sprintf("this account is locked after %d failed sign-ins: try again in %d minutes (at %s UTC)",
		models.MaxFailedLogins, max(mins, 1), until.UTC().Format("15:04"))
	return p.renderLogin(c, http.StatusTooManyRequests, v)
}

// logout answers POST /logout: the session is deleted and the cookie cleared.
func (p *Pages) logout(c echo.Context) error {
	if ck, err := c.Cookie(SessionCookie); err == nil && ck.Value != "" {
		if err := p.svc.Store().DeleteSession(c.Request().Context(), models.HashSecret(ck.Value)); err != nil {
			return err
		}
	}
	c.SetCookie(p.sessionCookie(c, "", -1))
	return c.Redirect(http.StatusSeeOther, "/login")
}

// sessionCookie is the session cookie with its security flags.
func (p *Pages) sessionCookie(c echo.Context, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: p.secure(c)}
}

// secure reports whether cookies must be Secure: configured, or the request is TLS.
func (p *Pages) secure(c echo.Context) bool { return p.d.SecureCookies || c.Request().TLS != nil }

// clientIP is the peer address of the connection. Forwarded headers are ignored:
// anyone can send them, and the limiter must not be that easy to sidestep.
func clientIP(c echo.Context) string {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		return c.Request().RemoteAddr
	}
	return host
}
