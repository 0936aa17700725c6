package pages

import (
	"net/url"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/errorpage"
)

// ErrorPage renders a domain error for a browser: the status, the caller-safe message,
// the rule or state behind a refusal and the field messages. It matches
// handlers.HTMLErrorRenderer; the server wires it as handlers.Deps.HTML. Internal
// errors arrive here already reduced to a generic message.
func (p *Pages) ErrorPage(c echo.Context, status int, e *models.Error) error {
	v := errorpage.View{Status: status, Heading: errorpage.Heading(status), Message: e.Message,
		Rule: e.Rule, State: e.State, Allowed: e.Allowed}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Fields = append(v.Fields, errorpage.Field{Name: k, Message: e.Fields[k]})
	}
	if SignedIn(c) != nil {
		v.SignedIn = true
		v.Meta = p.meta(c, v.Heading, "")
	} else {
		v.Meta.Title, v.Meta.Version = v.Heading, p.d.Version
	}
	if e.Code == models.EUNAUTHORIZED {
		v.Login = "/login"
		if ref, err := url.Parse(c.Request().Referer()); err == nil {
			v.Login = "/login?next=" + url.QueryEscape(safeNext(ref.RequestURI()))
		}
	}
	return render(c, status, errorpage.Page(v))
}
