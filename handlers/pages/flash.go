package pages

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
)

// flashCookie carries a one-off message from an action to the page it redirects to.
const flashCookie = "cs_flash"

// setFlash leaves a message for the next page the browser loads (kind: info,
// success, warning, error). The cookie is read once and cleared by meta.
func setFlash(c echo.Context, kind, msg string) {
	msg = contract.Truncate(msg, 500)
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: url.QueryEscape(kind + "|" + msg), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 60, Secure: c.Scheme() == "https"})
}

// takeFlash returns and clears the request's flash message. Only the kinds the
// components know are kept; the text is rendered escaped like any other data.
func takeFlash(c echo.Context) (kind, msg string) {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return "", ""
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true})
	raw, err := url.QueryUnescape(ck.Value)
	if err != nil {
		return "", ""
	}
	kind, msg, _ = strings.Cut(raw, "|")
	switch kind {
	case components.FlashInfo, components.FlashSuccess, components.FlashWarning, components.FlashError:
	default:
		kind = components.FlashInfo
	}
	return kind, msg
}

// done answers a successful form POST: flash the message and redirect (303) to to.
func done(c echo.Context, to, msg string) error {
	setFlash(c, components.FlashSuccess, msg)
	return c.Redirect(http.StatusSeeOther, safeNext(to))
}
