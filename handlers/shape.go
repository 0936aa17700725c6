package handlers

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// passedError is a 4xx or 5xx answer a wrapped net/http handler (the file server, the
// MCP transport, the metrics handler) tried to write, handed to the central error
// handler instead: it keeps the protocol's status and the handler's one-line message.
type passedError struct {
	status  int
	message string
}

// Error returns the status and message.
func (e *passedError) Error() string { return http.StatusText(e.status) + ": " + e.message }

// maxPassedMessage bounds what is kept of a wrapped handler's error text.
const maxPassedMessage = 512

// ShapeErrors adapts a net/http handler to Echo like echo.WrapHandler, except that an
// error answer it writes (status 400 or more) is not sent as it wrote it (bare text)
// but returned to the central error handler, which answers in the product's shape for
// the route (an HTML page, the API's JSON, a JSON-RPC error for /mcp) with the same
// status. Headers it set stay (Allow, WWW-Authenticate); its Content-Type and length
// go, being the bare text's. Successful answers, streams included, pass through.
func ShapeErrors(h http.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		w := &shapeWriter{ResponseWriter: c.Response().Writer}
		c.Response().Writer = w
		defer func() { c.Response().Writer = w.ResponseWriter }()
		h.ServeHTTP(c.Response(), c.Request())
		if w.status == 0 {
			return nil
		}
		c.Response().Writer = w.ResponseWriter
		c.Response().Committed, c.Response().Status, c.Response().Size = false, 0, 0
		hd := c.Response().Header()
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding"} {
			hd.Del(k)
		}
		msg := strings.TrimSpace(w.body.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return &passedError{status: w.status, message: msg}
	}
}

// shapeWriter holds back an error answer: from a WriteHeader of 400 or more on,
// nothing reaches the client and the body is kept (bounded) as the message.
type shapeWriter struct {
	http.ResponseWriter
	status  int // the held-back error status; 0 while passing through
	written bool
	body    strings.Builder
}

// WriteHeader passes a success status through and holds back an error status.
func (w *shapeWriter) WriteHeader(code int) {
	if !w.written && code >= 400 {
		w.status, w.written = code, true
		return
	}
	w.written = true
	w.ResponseWriter.WriteHeader(code)
}

// Write passes bytes through, or keeps the start of a held-back error's text.
func (w *shapeWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		if room := maxPassedMessage - w.body.Len(); room > 0 {
			w.body.Write(b[:min(room, len(b))])
		}
		return len(b), nil
	}
	w.written = true
	return w.ResponseWriter.Write(b)
}

// Flush flushes a passing stream; a held-back error has nothing to flush.
func (w *shapeWriter) Flush() {
	if w.status != 0 {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets a wrapped handler take the connection over (WebSocket).
func (w *shapeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
		return hj.Hijack()
	}
	return nil, nil, errors.New("hijacking is not supported")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *shapeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
