package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// statusOf maps a domain error code to its HTTP status.
func statusOf(code string) int {
	switch code {
	case models.EBADREQUEST:
		return http.StatusBadRequest
	case models.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case models.EFORBIDDEN:
		return http.StatusForbidden
	case models.ENOTFOUND:
		return http.StatusNotFound
	case models.ECONFLICT:
		return http.StatusConflict
	case models.EINVALID:
		return http.StatusUnprocessableEntity
	case models.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case models.EUNSUPPORTED:
		return http.StatusUnsupportedMediaType
	}
	return http.StatusInternalServerError
}

// HTMLErrorRenderer renders an error page for a browser request.
type HTMLErrorRenderer func(c echo.Context, status int, e *models.Error) error

// ErrorHandler is the one place errors become responses: domain errors keep their
// code and caller-safe message; echo's own errors (unknown route, body too large:
// 413 ETOOLARGE) become domain errors; anything else is logged and shown as a generic internal
// error, so internal details never reach a user.
type ErrorHandler struct {
	log  *slog.Logger
	html HTMLErrorRenderer
}

// NewErrorHandler returns an ErrorHandler logging to log. html, when set, renders
// errors for requests that are not API, MCP or JSON requests.
func NewErrorHandler(log *slog.Logger, html HTMLErrorRenderer) *ErrorHandler {
	return &ErrorHandler{log: log, html: html}
}

// StatusClientClosed is the status recorded (and written, should anyone still read)
// for a request whose client went away before it was answered: nginx's 499, so that a
// closed connection is never counted or logged as a server error.
const StatusClientClosed = 499

// Handle implements echo.HTTPErrorHandler. The answer has the product's error shape
// for every status: an HTML page for a browser, JSON {"error": {code, message,
// fields…}} for the API, a JSON-RPC error (the same object as its data) for /mcp.
func (h *ErrorHandler) Handle(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if clientGone(err, c) {
		h.log.Debug("client went away", "method", c.Request().Method, "path", c.Path(), "err", err)
		c.Response().WriteHeader(StatusClientClosed)
		return
	}
	e := h.domainError(err, c)
	status := statusOf(e.Code)
	var pe *passedError
	if errors.As(err, &pe) && pe.status >= 400 && pe.status < 500 {
		status = pe.status // the protocol's own status (405 for MCP's GET, 416 for a range)
	}
	if e.Code == models.EUNAUTHORIZED && wantsJSON(c) {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="countersign"`)
	}
	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(status)
	case isMCP(c):
		werr = c.JSON(status, jsonRPCError(e))
	case h.html != nil && !wantsJSON(c):
		werr = h.html(c, status, e)
	default:
		werr = c.JSON(status, map[string]any{"error": e})
	}
	if werr != nil {
		h.log.Error("writing error response", "err", werr)
	}
}

func (h *ErrorHandler) domainError(err error, c echo.Context) *models.Error {
	var de *models.Error
	if errors.As(err, &de) {
		if de.Code == models.EINTERNAL {
			h.log.Error("internal error", "method", c.Request().Method, "path", c.Path(), "err", err)
			return &models.Error{Code: models.EINTERNAL, Message: "internal error"}
		}
		return de
	}
	var pe *passedError
	if errors.As(err, &pe) {
		err = echo.NewHTTPError(pe.status, pe.message)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok && he.Code < 500 {
			msg = s
		}
		switch he.Code {
		case http.StatusNotFound:
			return &models.Error{Code: models.ENOTFOUND, Message: "no such page or endpoint"}
		case http.StatusMethodNotAllowed:
			return &models.Error{Code: models.EBADREQUEST, Message: "method not allowed"}
		case http.StatusRequestEntityTooLarge:
			return bodyTooLarge()
		case http.StatusUnauthorized:
			return &models.Error{Code: models.EUNAUTHORIZED, Message: msg}
		case http.StatusForbidden:
			return &models.Error{Code: models.EFORBIDDEN, Message: msg}
		case http.StatusUnsupportedMediaType:
			return &models.Error{Code: models.EUNSUPPORTED, Message: msg}
		}
		if he.Code < 500 {
			return &models.Error{Code: models.EBADREQUEST, Message: msg}
		}
	}
	h.log.Error("internal error", "method", c.Request().Method, "path", c.Path(), "err", err)
	return &models.Error{Code: models.EINTERNAL, Message: "internal error"}
}

// clientGone reports whether err is the end of a request whose client went away
// (its context cancelled) rather than a refusal or a failure of ours: a refusal
// already decided keeps its answer.
func clientGone(err error, c echo.Context) bool {
	var de *models.Error
	if errors.As(err, &de) && de.Code != models.EINTERNAL {
		return false
	}
	return errors.Is(err, context.Canceled) || c.Request().Context().Err() != nil
}

// isMCP reports whether the request is for the MCP endpoint, whose errors are
// JSON-RPC errors.
func isMCP(c echo.Context) bool {
	p := c.Request().URL.Path
	return p == "/mcp" || strings.HasPrefix(p, "/mcp/")
}

// jsonRPCError is e as a JSON-RPC 2.0 error response without a request id (the
// request could not be read as a call): the code says the class (-32700 unreadable,
// -32602 invalid params, -32603 ours, -32600 any other refusal) and data carries the
// product's error object.
func jsonRPCError(e *models.Error) map[string]any {
	code := -32600
	switch e.Code {
	case models.EBADREQUEST:
		code = -32700
	case models.EINVALID:
		code = -32602
	case models.EINTERNAL:
		code = -32603
	}
	return map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": e.Message, "data": e}}
}

// wantsJSON reports whether the response should be JSON: API and MCP paths, and
// requests that accept JSON but not HTML.
func wantsJSON(c echo.Context) bool {
	p := c.Request().URL.Path
	if strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/mcp") {
		return true
	}
	accept := c.Request().Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// DecodeJSON reads the request body into v strictly: a body in another media type
// than JSON (a Content-Type that is not application/json or +json) is 415
// EUNSUPPORTED; a string that is not valid UTF-8 or holds a NUL is EINVALID naming
// its field (see TextProblem);
// unknown fields and wrongly typed values (a number out of its field's range among
// them) are field-level EINVALID errors; unreadable JSON is EBADREQUEST.
func DecodeJSON(c echo.Context, v any) error {
	if err := jsonContentType(c); err != nil {
		return err
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return jsonError(err)
	}
	if field, msg, bad := badTextField(body); bad {
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{field: msg}}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return models.Errorf(models.EBADREQUEST, "request body must hold one JSON value")
	}
	return nil
}

// jsonContentType refuses a request whose Content-Type names another media type than
// JSON. A request without one is read as JSON: clients that send none mean it.
func jsonContentType(c echo.Context) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return models.Errorf(models.EUNSUPPORTED, "the request body must be JSON (Content-Type: application/json), not %q", ct)
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := jsonField(te.Field)
		msg := fmt.Sprintf("must be %s, not %s", jsonKind(te.Type.Kind().String()), te.Value)
		if r := numberRange(te.Type); r != "" && strings.HasPrefix(te.Value, "number") {
			msg = "must be " + r + ", not " + te.Value
		}
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{field: msg}}
	case errors.As(err, &se):
		return models.Errorf(models.EBADREQUEST, "malformed JSON at byte %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{name: "unknown field"}}
	case err.Error() == "EOF":
		return models.Errorf(models.EBADREQUEST, "request body is empty; a JSON object is required")
	}
	var de *models.Error
	if errors.As(err, &de) {
		return de
	}
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
		return bodyTooLarge() // the body limit cut the body off while it was read
	}
	return models.Errorf(models.EBADREQUEST, "malformed JSON: %v", err)
}

// jsonField is the name of a field as a client wrote it, from the path encoding/json
// reports: embedded Go structs (their names capitalised, as no JSON name here is) are
// left out; "body" for the whole.
func jsonField(path string) string {
	var parts []string
	for _, p := range strings.Split(path, ".") {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "body"
	}
	return strings.Join(parts, ".")
}

// bodyTooLarge is the error of a request body over MaxBodyBytes.
func bodyTooLarge() *models.Error {
	return models.Errorf(models.ETOOLARGE, "request body too large: the limit is %d MiB", MaxBodyBytes>>20)
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "a list"
	case "map", "struct":
		return "an object"
	}
	return k
}
