package handlers

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// maxFormMemory is how much of a multipart form is kept in memory; the body limit
// (MaxBodyBytes) is lower, so no part ever reaches a temporary file.
const maxFormMemory = MaxBodyBytes + 1<<10

// TextProblem says why s cannot be stored as text, or "" when it can: valid UTF-8
// without NUL (see models.TextProblem, the rule's one home).
func TextProblem(s string) string { return models.TextProblem(s) }

// inputBoundary is the one place a request's text is checked before any handler,
// session or CSRF check reads it: a body of unknown length (chunked) is read
// whole under the body limit first, so a form or a body no handler reads is 413
// like one whose Content-Length says so; then path parameters, query keys and
// values, and the fields of a form body must be text the store can hold (see
// TextProblem), else the request is 422 EINVALID naming the field. JSON bodies are
// checked field by field in DecodeJSON, /mcp bodies in the MCP endpoint.
func inputBoundary(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if err := bufferUnknownLength(req); err != nil {
			return err
		}
		fe := models.FieldErrors{}
		checkPath(c, &fe)
		if q, err := url.ParseQuery(req.URL.RawQuery); err != nil {
			return models.Errorf(models.EBADREQUEST, "malformed query string")
		} else {
			checkValues(q, "query", &fe)
		}
		if isForm(req) {
			if err := parseForm(req); err != nil {
				return err
			}
			checkValues(req.PostForm, "form", &fe)
			if req.MultipartForm != nil {
				checkValues(req.MultipartForm.Value, "form", &fe)
			}
		}
		if err := fe.Err(); err != nil {
			return err
		}
		return next(c)
	}
}

// bufferUnknownLength reads a body sent without a Content-Length (chunked) into
// memory under the body limit, which answers 413 when it is longer. Bodies with a
// length were already refused by the body limit if too long.
func bufferUnknownLength(req *http.Request) error {
	if req.ContentLength >= 0 {
		return nil
	}
	b, err := ReadBody(req)
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(b))
	return nil
}

// readError turns an error reading a request body into a domain error: over the
// body limit is 413, anything else an unreadable request.
func readError(err error) error {
	var he *echo.HTTPError
	var mb *http.MaxBytesError
	if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge || errors.As(err, &mb) {
		return bodyTooLarge()
	}
	return models.Errorf(models.EBADREQUEST, "the request body could not be read")
}

// isForm reports whether the request carries a form body (urlencoded or multipart).
func isForm(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return false
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	return mt == echo.MIMEApplicationForm || mt == echo.MIMEMultipartForm
}

// parseForm parses a form body now, so that every later reader (the CSRF check, the
// handler) sees the values checked here; only a body over the limit is refused.
func parseForm(req *http.Request) error {
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	var err error
	if mt == echo.MIMEMultipartForm {
		err = req.ParseMultipartForm(maxFormMemory)
	} else {
		err = req.ParseForm()
	}
	if err != nil {
		if e := readError(err); models.ErrorCode(e) == models.ETOOLARGE {
			return e
		}
	}
	// A body that is not the form its type says is left to the route: a JSON route
	// answers 415, a form route finds its fields missing. What was read is checked.
	return nil
}

// checkPath names each path parameter whose value is not storable text; a bad part
// of the path outside any parameter names "path".
func checkPath(c echo.Context, fe *models.FieldErrors) {
	names, values := c.ParamNames(), c.ParamValues()
	bad := false
	for i, name := range names {
		if i >= len(values) {
			break
		}
		v := values[i]
		if strings.Contains(v, "%") {
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
		}
		if msg := TextProblem(v); msg != "" {
			fe.Add(fieldName(name), msg)
			bad = true
		}
	}
	if msg := TextProblem(c.Request().URL.Path); msg != "" && !bad {
		fe.Add("path", msg)
	}
}

// checkValues names each key or value of vs that is not storable text, in key order
// so that the same request always names the same field; a bad key names where (the
// query or the form) since it names no field.
func checkValues(vs url.Values, where string, fe *models.FieldErrors) {
	keys := make([]string, 0, len(vs))
	for k := range vs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := TextProblem(k); msg != "" {
			fe.Add(where, "a field name "+msg)
			continue
		}
		for _, v := range vs[k] {
			if msg := TextProblem(v); msg != "" {
				fe.Add(k, msg)
				break
			}
		}
	}
}

// fieldName is a path parameter's name as the errors name it ("*" is Echo's
// wildcard: the rest of the path).
func fieldName(param string) string {
	if param == "*" {
		return "path"
	}
	return param
}
