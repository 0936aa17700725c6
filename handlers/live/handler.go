package live

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// SessionCookie is the dashboard's session cookie (the same name handlers/pages sets):
// it holds a random secret whose models.HashSecret is the stored session id.
const SessionCookie = models.SessionCookie

// Register mounts GET /ws on e.
func (h *Hub) Register(e *echo.Echo) {
	e.GET("/ws", h.Handler)
}

// Handler serves GET /ws?after=ID. It answers 401 without a valid, unexpired session of
// an agent that may sign in, 400 for a malformed after or a request that is not a
// WebSocket handshake, 403 for a browser origin other than the request's host, and 503
// when the hub is not running — all before upgrading. Once connected the page receives
// every event with id > after (replayed from the database, in order), then every new
// event as it commits, with no gap or duplicate at the handover; without after it
// starts at the newest event. It returns when the connection ends.
func (h *Hub) Handler(c echo.Context) error {
	req := c.Request()
	agent, sess, err := h.authenticate(req.Context(), req)
	if err != nil {
		return err
	}
	after := int64(-1)
	if raw, ok := req.URL.Query()["after"]; ok {
		v := ""
		if len(raw) > 0 {
			v = raw[0]
		}
		after, err = strconv.ParseInt(v, 10, 64)
		if err != nil || after < 0 {
			return models.Errorf(models.EBADREQUEST, "after must be an event id (a non-negative integer)")
		}
	}
	if !websocket.IsWebSocketUpgrade(req) {
		return models.Errorf(models.EBADREQUEST, "/ws speaks WebSocket only")
	}
	if !h.checkOrigin(req) {
		return models.Forbidden("same_origin", "cross-origin WebSocket connections are refused")
	}
	if !h.running() {
		c.Response().Header().Set("Retry-After", "5")
		return c.JSON(http.StatusServiceUnavailable, map[string]any{
			"error": &models.Error{Code: "unavailable", Message: "live updates are not running"},
		})
	}

	if after < 0 {
		// "From now" is fixed before the handshake answers: registering happens after
		// it, and events committed in between must not be lost on a client that
		// already believes it is connected.
		after = h.newest()
	}
	conn, err := h.upgrader.Upgrade(c.Response(), req, nil)
	if err != nil {
		return nil // the upgrader has answered the request
	}
	cl := newClient(h, conn, agent, sess)
	if !h.register(cl, after) {
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down")
		_ = conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeWait))
		_ = conn.Close()
		return nil // the connection is hijacked: no HTTP error response is possible
	}
	go cl.readLoop()
	cl.writeLoop()
	return nil
}

// newest returns the largest event id the hub has read.
func (h *Hub) newest() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// running reports whether the hub accepts clients.
func (h *Hub) running() bool { return h.currentState() == stateRunning }

// authenticate returns the request's agent and session, or an EUNAUTHORIZED error when
// there is no cookie, the session is unknown or expired, or its agent may not sign in.
func (h *Hub) authenticate(ctx context.Context, r *http.Request) (*models.Agent, *models.Session, error) {
	unauthorized := models.Errorf(models.EUNAUTHORIZED, "sign in to receive live updates")
	ck, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, nil, unauthorized
	}
	a, s, err := models.ResolveSession(ctx, h.store, ck.Value, h.opts.Clock())
	if models.ErrorCode(err) == models.EUNAUTHORIZED {
		return nil, nil, unauthorized
	}
	return a, s, err
}

// checkOrigin is the upgrader's CheckOrigin: a browser's Origin must name the host the
// request was sent to (or one of Options.AllowedOrigins), which stops another site's
// page from opening the stream with the user's cookie (cross-site WebSocket
// hijacking). A request without Origin does not come from a browser page, so it
// carries no ambient cookie and is allowed.
func (h *Hub) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, a := range h.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// handshakeError is the upgrader's answer to a handshake it refuses (a WebSocket
// version other than 13, a missing key): the product's JSON error object with the
// status the upgrader chose, instead of its bare text. The version it speaks is
// named in Sec-WebSocket-Version, as RFC 6455 asks.
func handshakeError(w http.ResponseWriter, _ *http.Request, status int, reason error) {
	code := models.EBADREQUEST
	if status == http.StatusForbidden {
		code = models.EFORBIDDEN
	}
	w.Header().Set("Sec-WebSocket-Version", "13")
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": &models.Error{Code: code, Message: reason.Error()}})
}
