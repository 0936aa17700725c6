package handlers

import (
	"fmt"
	"math"
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
// absent, a field error in fe naming the range when it is not a whole number in it.
func QueryInt(c echo.Context, name string, fe *models.FieldErrors) int64 {
	v := c.QueryParam(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		fe.Add(name, fmt.Sprintf("must be a whole number between 0 and %d", int64(math.MaxInt64)))
		return 0
	}
	return n
}

// MaxLimit is the most items one page of a list endpoint holds; DefaultLimit the
// number it holds when the request gives no limit.
const (
	MaxLimit     = 1000
	DefaultLimit = 100
)

// QueryLimit parses the optional limit query parameter of a list endpoint: 0 (the
// endpoint's default, DefaultLimit) when absent, a field error in fe naming the range
// when it is not a whole number from 1 to MaxLimit.
func QueryLimit(c echo.Context, fe *models.FieldErrors) int {
	v := c.QueryParam("limit")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		fe.Add("limit", fmt.Sprintf("must be a whole number between 1 and %d (leave it out for %d)", MaxLimit, DefaultLimit))
		return 0
	}
	return n
}

// QueryIntIn parses the optional integer query parameter name: 0 when absent, a field
// error in fe naming the range when it is not a whole number from lo to hi (lo >= 1,
// so 0 stays "absent"). Bounds that match the column a value is looked up in keep an
// overflowing number a 422 instead of a database error.
func QueryIntIn(c echo.Context, name string, lo, hi int64, fe *models.FieldErrors) int {
	v := c.QueryParam(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		fe.Add(name, fmt.Sprintf("must be a whole number between %d and %d", lo, hi))
		return 0
	}
	return int(n)
}
