package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/overview"
)

// overviewPage answers GET /.
func (p *Pages) overviewPage(c echo.Context) error {
	v := overview.View{Meta: p.meta(c, "Overview", layout.NavOverview)}
	return ok(c, overview.Page(v))
}
