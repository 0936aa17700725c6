package pages

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// render writes a templ component as an HTML response with status. Pages are
// per-user and change all the time: never cached.
func render(c echo.Context, status int, comp templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// ok renders comp with 200.
func ok(c echo.Context, comp templ.Component) error { return render(c, http.StatusOK, comp) }

// fieldErrors returns the field messages of a domain error (nil for others).
func fieldErrors(err error) map[string]string {
	var e *models.Error
	if errors.As(err, &e) && e.Code == models.EINVALID {
		return e.Fields
	}
	return nil
}

// isInvalid reports whether err is a field-level validation error that a form should
// show beside its fields (422) rather than on the error page.
func isInvalid(err error) bool { return models.ErrorCode(err) == models.EINVALID }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// parseFixKey parses a field key "fix_tasks[N].field" into N and field.
func parseFixKey(key string) (n int, field string, ok bool) {
	rest, ok := strings.CutPrefix(key, "fix_tasks[")
	if !ok {
		return 0, "", false
	}
	num, field, ok := strings.Cut(rest, "].")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	return n, field, err == nil
}
