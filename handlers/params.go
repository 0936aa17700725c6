package handlers

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// PathID parses the numeric path parameter name, or returns ENOTFOUND: a malformed id
// names nothing.
func PathID(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, models.NotFound(name, c.Param(name))
	}
	return id, nil
}

// QueryInt parses the optional non-negative integer query parameter name: 0 when
// absent, a field error in fe when it is not a whole number.
func QueryInt(c echo.Context, name string, fe *models.FieldErrors) int64 {
	v := c.QueryParam(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		fe.Add(name, "must be a non-negative whole number")
		return 0
	}
	return n
}
