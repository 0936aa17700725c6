package live

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"

	"github.com/countersign/countersign/models"
)

// closeWait bounds the close frame sent to a client that is going away; a client that
// does not read gets its socket closed without it.
const closeWait = time.Second

// client is one connected page. The handler goroutine writes (replay, then the queue
// and pings); a reader goroutine consumes pongs and notices the page leaving; a closer
// goroutine, started by Hub.drop exactly once, sends the close frame and closes the
// socket, which unblocks both.
type client struct {
	hub    *Hub
	conn   *websocket.Conn
	remote string
	send   chan *message
	sessID string
	expiry time.Time
	// admin says the session's agent sees the agent fields only admins see
	// (models.Agent.SeesAdminFields); looked up again with the session.
	admin bool

	// set by register
	ctx    context.Context // ends when the client is dropped or the hub stops
	cancel context.CancelFunc
	after  int64 // the client has every event with id <= after
	until  int64 // the hub's high-water mark at registration

	sent       int64 // largest event id sent; only the writer touches it
	readerDone chan struct{}
	writerDone chan struct{}
}

func newClient(h *Hub, conn *websocket.Conn, a *models.Agent, s *models.Session) *client {
	return &client{
		hub:        h,
		conn:       conn,
		remote:     conn.RemoteAddr().String(),
		send:       make(chan *message, h.opts.QueueSize),
		sessID:     s.ID,
		expiry:     s.ExpiresAt,
		admin:      a.SeesAdminFields(),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// close sends a close frame (bounded by closeWait), closes the socket and waits for the
// reader and the writer to end. Hub.dropLocked calls it once per client.
func (c *client) close(code int, reason string) {
	defer c.hub.clientWG.Done()
	c.cancel()
	msg := websocket.FormatCloseMessage(code, reason)
	_ = c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeWait))
	_ = c.conn.Close()
	<-c.readerDone
	<-c.writerDone
}

// readLoop discards whatever the page sends (it only listens), keeps the read deadline
// fresh on pongs and drops the client when the connection ends.
func (c *client) readLoop() {
	defer close(c.readerDone)
	wait := c.hub.opts.PongWait
	c.conn.SetReadLimit(1024)
	_ = c.conn.SetReadDeadline(time.Now().Add(wait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(wait))
	})
	for {
		if _, _, err := c.conn.NextReader(); err != nil {
			break
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(wait))
	}
	c.hub.drop(c, websocket.CloseNormalClosure, "")
}

// writeLoop replays what the page missed, then sends queued messages and pings until
// the client is dropped, and ends the stream when the session ends.
func (c *client) writeLoop() {
	defer close(c.writerDone)
	if err := c.replay(); err != nil {
		if c.ctx.Err() == nil {
			c.hub.log.Warn("websocket replay failed", "after", c.after, "err", err)
		}
		c.hub.drop(c, websocket.CloseInternalServerErr, "replay failed; reconnect")
		return
	}
	o := &c.hub.opts
	ping := time.NewTicker(o.PongWait / 2)
	defer ping.Stop()
	sess := time.NewTimer(c.nextSessionCheck())
	defer sess.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case m := <-c.send:
			if err := c.deliver(m); err != nil {
				c.hub.drop(c, websocket.CloseGoingAway, "write failed")
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteWait)); err != nil {
				c.hub.drop(c, websocket.CloseGoingAway, "ping failed")
				return
			}
		case <-sess.C:
			if reason := c.sessionEnded(); reason != "" {
				c.hub.drop(c, websocket.ClosePolicyViolation, reason)
				return
			}
			sess.Reset(c.nextSessionCheck())
		}
	}
}

// replay sends the events in (after, until] from the database, a page per message, and
// leaves sent at the larger of the two ends.
func (c *client) replay() error {
	o := &c.hub.opts
	cursor := c.after
	for cursor < c.until {
		evs, err := c.hub.store.ListEvents(c.ctx, cursor, o.BatchSize)
		if err != nil {
			return err
		}
		n := 0
		for n < len(evs) && evs[n].ID <= c.until {
			n++
		}
		if n == 0 {
			break
		}
		raws := make([][]byte, n)
		for i := range evs[:n] {
			raws[i] = encodeFor(evs[i], c.admin, c.hub.log)
		}
		if err := c.write(joinEvents(raws)); err != nil {
			return err
		}
		cursor = evs[n-1].ID
		if n < len(evs) || len(evs) < o.BatchSize {
			break
		}
	}
	c.sent = max(c.after, c.until)
	return nil
}

// deliver sends m, leaving out events the client already has.
func (c *client) deliver(m *message) error {
	if m.log {
		return c.writePrepared(m.pm)
	}
	m = m.For(c.admin)
	if m.last <= c.sent {
		return nil
	}
	defer func() { c.sent = m.last }()
	if m.first > c.sent {
		return c.writePrepared(m.pm)
	}
	// Only when the page claimed more than the hub had read at registration.
	var raws [][]byte
	for i, id := range m.ids {
		if id > c.sent {
			raws = append(raws, m.raws[i])
		}
	}
	return c.write(joinEvents(raws))
}

func (c *client) write(data []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteWait))
	return c.conn.WriteMessage(websocket.TextMessage, data)
}

func (c *client) writePrepared(pm *websocket.PreparedMessage) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteWait))
	return c.conn.WritePreparedMessage(pm)
}

// nextSessionCheck is the time until the session expires or is due to be looked up
// again, whichever comes first.
func (c *client) nextSessionCheck() time.Duration {
	d := c.hub.opts.SessionCheck
	if left := c.expiry.Sub(c.hub.opts.Clock()); left < d {
		d = left
	}
	return max(d, 10*time.Millisecond)
}

// sessionEnded returns why the client's session no longer holds, or "" while it does.
// A failed lookup keeps the stream: the database being briefly away is no logout.
func (c *client) sessionEnded() string {
	if !c.hub.opts.Clock().Before(c.expiry) {
		return "session expired"
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	s, err := c.hub.store.GetSession(ctx, c.sessID)
	var de *models.Error
	if errors.As(err, &de) && de.Code == models.ENOTFOUND {
		return "session ended"
	}
	if err != nil {
		return ""
	}
	a, err := c.hub.store.GetAgent(ctx, s.AgentID)
	if models.ErrorCode(err) == models.ENOTFOUND || (err == nil && !a.CanSignIn()) {
		return "session ended"
	}
	c.expiry = s.ExpiresAt
	c.admin = a.SeesAdminFields()
	return ""
}
