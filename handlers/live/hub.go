// Package live pushes committed events and worker log output to dashboard pages over
// a WebSocket at /ws (static/live.js is the client).
//
// One hub goroutine follows the store's commit notifications (with a fallback poll),
// reads each batch of new events once, encodes it once (twice when it carries agent
// events: as admins see it, and without the agent fields only admins see, the rule of
// models.Agent.SeesAdminFields) and hands the prepared frame to every client's bounded
// queue; the database is never queried per client per event. A client whose queue is full is dropped with a policy-violation close, so a
// slow page never slows the hub or the other pages; it reconnects with its last event
// id and the replay gives it what it missed.
//
// Gap-free handover: a connecting client is registered under the hub's lock together
// with the hub's high-water mark H (every event with id <= H has been read and handed to
// the clients registered at that moment). Every batch read later (ids > H) lands in the
// new client's queue, while it replays ids in (after, H] from the database before it
// sends anything from the queue. Event ids commit in id order (models/store
// serialises appends), so nothing with an id <= H can commit after the hub read past
// it, and each client additionally skips ids it has already sent: no gap, no duplicate.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/startstop"
)

// Options tune a Hub; the zero value gives the defaults named on each field.
type Options struct {
	// QueueSize is how many messages may wait for one client (default 256). An event
	// batch that finds the queue full drops the client.
	QueueSize int
	// PollInterval is the fallback poll for new events when no commit notification
	// arrives (default 2 s).
	PollInterval time.Duration
	// BatchSize is how many events one query reads and one message carries (default
	// 500).
	BatchSize int
	// WriteWait bounds every write to a client (default 10 s).
	WriteWait time.Duration
	// PongWait is how long a client may stay silent (no pong, no message) before it is
	// dropped (default 60 s). Pings go out every PongWait/2.
	PongWait time.Duration
	// LogFlush is the longest a log chunk waits to be coalesced with the next ones
	// (default 100 ms); at most one log message per task is sent per interval.
	LogFlush time.Duration
	// LogMaxPending bounds the log bytes buffered per task between flushes (default
	// 64 KiB); the excess is dropped and the client sees a marker saying how much.
	LogMaxPending int
	// SessionCheck is how often a connected client's session is looked up again, so
	// that a logout or a disabled agent ends the stream (default 1 min). The session's
	// expiry ends it on time regardless.
	SessionCheck time.Duration
	// AllowedOrigins lists extra browser origins ("https://dash.example.com") allowed
	// to connect besides the one matching the request's Host, for reverse proxies that
	// rewrite Host.
	AllowedOrigins []string
	// Clock returns the current time; tests replace it (default time.Now).
	Clock func() time.Time
}

func (o *Options) defaults() {
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.WriteWait <= 0 {
		o.WriteWait = 10 * time.Second
	}
	if o.PongWait <= 0 {
		o.PongWait = 60 * time.Second
	}
	if o.LogFlush <= 0 {
		o.LogFlush = 100 * time.Millisecond
	}
	if o.LogMaxPending <= 0 {
		o.LogMaxPending = 64 << 10
	}
	if o.SessionCheck <= 0 {
		o.SessionCheck = time.Minute
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}

// Hub states.
const (
	stateNew = iota
	stateRunning
	stateStopped
)

// Hub fans committed events and log chunks out to the connected WebSocket clients.
// Build it with New, mount it with Register, run it with Start and end it with Stop.
// Its start and stop are the shared background-service base's (runner/startstop,
// which imports only the standard library, so the web side may use it too).
type Hub struct {
	startstop.Base

	store    models.Store
	log      *slog.Logger
	opts     Options
	upgrader websocket.Upgrader

	mu sync.Mutex
	// state gates clients: register checks it under mu, and halt moves it to
	// stateStopped under mu while dropping every client, so none slips in after.
	state   int
	ctx     context.Context // the running hub's context; client work derives from it
	clients map[*client]struct{}
	// last is the high-water mark: every event with id <= last has been read and
	// handed to the clients registered at that time. Only the run goroutine raises it,
	// always under mu together with the hand-out.
	last int64

	clientWG sync.WaitGroup // client goroutines and closers
	count    atomic.Int64

	logMu      sync.Mutex
	logPending map[int64]*pendingLog
	logOrder   []int64 // tasks in the order their first pending chunk arrived
	logWake    chan struct{}
}

// New returns a hub reading events from store. It does nothing until Start.
func New(store models.Store, log *slog.Logger, opts Options) *Hub {
	opts.defaults()
	if log == nil {
		log = slog.Default()
	}
	h := &Hub{
		store:      store,
		log:        log.With("component", "live"),
		opts:       opts,
		clients:    map[*client]struct{}{},
		logPending: map[int64]*pendingLog{},
		logWake:    make(chan struct{}, 1),
	}
	h.upgrader = websocket.Upgrader{
		ReadBufferSize:   512,
		WriteBufferSize:  4096,
		WriteBufferPool:  &sync.Pool{},
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      h.checkOrigin,
		Error:            handshakeError,
	}
	return h
}

// Start reads the newest event id (clients that give no id start there) and runs the
// hub in the background until Stop or until ctx ends; either way every client is then
// closed. Starting a running hub does nothing; a stopped hub cannot be started again.
// A failed read leaves the hub as it was, so Start may be tried again.
func (h *Hub) Start(ctx context.Context) error {
	switch h.currentState() {
	case stateRunning:
		return nil
	case stateStopped:
		return errHubStopped
	}
	last, err := newestEventID(ctx, h.store)
	if err != nil {
		return err
	}
	runCtx, ok, started, stopped := h.StartInitOnce(ctx)
	if !ok {
		// Another Start won: the hub runs, or is about to, unless it stopped since.
		if h.currentState() == stateStopped {
			return errHubStopped
		}
		return nil
	}
	h.mu.Lock()
	if h.state == stateStopped { // a Stop came first: it found nothing to wait for
		h.mu.Unlock()
		stopped()
		return errHubStopped
	}
	h.state, h.ctx, h.last = stateRunning, runCtx, last
	h.mu.Unlock()
	go func() {
		defer stopped()
		started()
		logDone := make(chan struct{})
		go func() {
			defer close(logDone)
			h.logLoop(runCtx)
		}()
		h.run(runCtx) // halts the hub as it returns: no client registers after
		<-logDone
		h.clientWG.Wait()
	}()
	return nil
}

var errHubStopped = errors.New("live: hub already stopped")

// currentState returns the hub's state.
func (h *Hub) currentState() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// Stop closes every client with "going away" (1001), stops the hub and waits for its
// goroutines until ctx ends. It is idempotent and may be called without Start; a hub
// stopped before it started never starts.
func (h *Hub) Stop(ctx context.Context) error {
	h.halt()
	return h.Base.Stop(ctx)
}

// halt marks the hub stopped and closes every client; the run's context ends with
// Stop (or with Start's context), which ends the hub's own goroutines.
func (h *Hub) halt() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = stateStopped
	for c := range h.clients {
		h.dropLocked(c, websocket.CloseGoingAway, "server shutting down")
	}
}

// Clients returns the number of connected clients, for the metrics gauge.
func (h *Hub) Clients() int { return int(h.count.Load()) }

// run follows the store's notifications and the fallback ticker, reading new events
// once per wake-up and fanning them out.
func (h *Hub) run(ctx context.Context) {
	defer h.halt()
	wake := h.store.Subscribe(ctx)
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	h.poll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case id, ok := <-wake:
			if !ok {
				// The store closed its notifications; the ticker still polls.
				wake = nil
				continue
			}
			h.mu.Lock()
			seen := id <= h.last
			h.mu.Unlock()
			if seen {
				continue
			}
		case <-tick.C:
		}
		h.poll(ctx)
	}
}

// poll reads every event after the high-water mark, a batch at a time, and hands each
// batch to the clients.
func (h *Hub) poll(ctx context.Context) {
	for ctx.Err() == nil {
		h.mu.Lock()
		after := h.last
		h.mu.Unlock()
		evs, err := h.store.ListEvents(ctx, after, h.opts.BatchSize)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("reading new events", "after", after, "err", err)
			}
			return
		}
		if len(evs) == 0 {
			return
		}
		h.fanout(newEventMessage(evs, h.log))
		if len(evs) < h.opts.BatchSize {
			return
		}
	}
}

// fanout raises the high-water mark to the batch's last id and queues the batch for
// every client, dropping each client whose queue is full. It never blocks.
func (h *Hub) fanout(m *message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.last > h.last {
		h.last = m.last
	}
	for c := range h.clients {
		select {
		case c.send <- m:
		default:
			h.dropLocked(c, websocket.ClosePolicyViolation, "too slow: send queue full")
		}
	}
}

// register adds c to the fan-out and fixes its replay range: ids in (after, last] come
// from the database, later ones through the queue. after < 0 means "from now". It
// reports false when the hub is not running.
func (h *Hub) register(c *client, after int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateRunning {
		return false
	}
	if after < 0 {
		after = h.last
	}
	c.after, c.until = after, h.last
	c.ctx, c.cancel = context.WithCancel(h.ctx)
	h.clients[c] = struct{}{}
	h.count.Add(1)
	h.clientWG.Add(1) // the closer goroutine every client ends with
	return true
}

// drop removes c from the fan-out and closes it with code; later calls do nothing.
func (h *Hub) drop(c *client, code int, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(c, code, reason)
}

func (h *Hub) dropLocked(c *client, code int, reason string) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	h.count.Add(-1)
	if code == websocket.ClosePolicyViolation {
		h.log.Info("dropping websocket client", "reason", reason, "remote", c.remote)
	}
	// Closing may wait up to a second for a congested socket: never under mu, never
	// in the fan-out path.
	go c.close(code, reason)
}

// newestEventID returns the largest committed event id (0 when there are none) with a
// logarithmic number of indexed one-row queries: ListEvents(x, 1) is empty exactly when
// x >= the largest id.
func newestEventID(ctx context.Context, st models.Store) (int64, error) {
	first, err := st.ListEvents(ctx, 0, 1)
	if err != nil || len(first) == 0 {
		return 0, err
	}
	lo := first[0].ID // an id that exists: max >= lo
	hi := lo
	for { // grow hi until nothing lies beyond it: max <= hi
		evs, err := st.ListEvents(ctx, hi, 1)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		lo, hi = evs[0].ID, evs[0].ID*2
	}
	for lo < hi { // max in [lo, hi]
		mid := lo + (hi-lo+1)/2
		evs, err := st.ListEvents(ctx, mid-1, 1)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			hi = mid - 1
		} else {
			lo = evs[0].ID
		}
	}
	return lo, nil
}

// message is one WebSocket text message, encoded once and shared by every client.
// An event batch carrying agent events is encoded twice: as admins see it (pm, raws)
// and as everyone else does (public), the fields only admins see left out (see
// models.Event.WithoutAdminFields); any other batch is the same for everyone.
type message struct {
	pm *websocket.PreparedMessage
	// first and last are the ids of the events it carries (0 for a log message); raws
	// and ids let a client that already sent some of them send only the rest.
	first, last int64
	ids         []int64
	raws        [][]byte
	log         bool
	// public is the batch for sessions that do not see admin fields; nil: pm and raws.
	public *message
}

// For returns the message as a session sees it: admin says it SeesAdminFields.
func (m *message) For(admin bool) *message {
	if admin || m.public == nil {
		return m
	}
	return m.public
}

// newEventMessage encodes evs (oldest first) as one message: an object for a single
// event, an array otherwise, as static/live.js reads both. The public version is
// encoded only when some event carries admin fields.
func newEventMessage(evs []models.Event, log *slog.Logger) *message {
	m := encodeBatch(evs, true, log)
	for i := range evs {
		if evs[i].CarriesAdminFields() {
			m.public = encodeBatch(evs, false, log)
			break
		}
	}
	return m
}

// encodeBatch encodes evs as a session that sees admin fields (admin) or not does.
func encodeBatch(evs []models.Event, admin bool, log *slog.Logger) *message {
	m := &message{first: evs[0].ID, last: evs[len(evs)-1].ID}
	m.ids = make([]int64, len(evs))
	m.raws = make([][]byte, len(evs))
	for i := range evs {
		m.ids[i] = evs[i].ID
		m.raws[i] = encodeFor(evs[i], admin, log)
	}
	m.pm = prepare(joinEvents(m.raws))
	return m
}

// encodeFor returns the event's JSON as a session sees it: without the agent fields
// only admins see unless admin.
func encodeFor(e models.Event, admin bool, log *slog.Logger) []byte {
	if !admin {
		e = e.WithoutAdminFields()
	}
	return encodeEvent(&e, log)
}

// encodeEvent returns the event's JSON; data that is not valid JSON is left out
// rather than losing the event. The stream is one message for every session, so a
// template change goes out without its diff, which holds both versions' YAML,
// held-out tests included: the template page and the API show it to those who may
// read it, and live.js uses no event's data.
func encodeEvent(e *models.Event, log *slog.Logger) []byte {
	if e.Type == models.EventTemplateChanged {
		e = withoutDiff(e)
	}
	b, err := json.Marshal(e)
	if err == nil {
		return b
	}
	log.Warn("event data is not JSON; sending it without data", "id", e.ID, "err", err)
	c := *e
	c.Data = nil
	b, err = json.Marshal(&c)
	if err != nil { // cannot happen without Data; keep the id so the client advances
		return []byte(`{"id":` + strconv.FormatInt(e.ID, 10) + `}`)
	}
	return b
}

// withoutDiff returns a copy of e whose data has no "diff" (unreadable data: none).
func withoutDiff(e *models.Event) *models.Event {
	c := *e
	var data map[string]json.RawMessage
	if len(c.Data) == 0 || json.Unmarshal(c.Data, &data) != nil {
		c.Data = nil
		return &c
	}
	if _, ok := data["diff"]; !ok {
		return &c
	}
	delete(data, "diff")
	c.Data, _ = json.Marshal(data)
	return &c
}

// joinEvents returns one encoded event as is and several as a JSON array.
func joinEvents(raws [][]byte) []byte {
	if len(raws) == 1 {
		return raws[0]
	}
	n := 2
	for _, r := range raws {
		n += len(r) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, r := range raws {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}

// prepare builds the shared frame; text messages without compression cannot fail.
func prepare(data []byte) *websocket.PreparedMessage {
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	if err != nil {
		panic("live: preparing a message: " + err.Error())
	}
	return pm
}
