package live

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// pendingLog is the output of one task waiting for the next flush.
type pendingLog struct {
	buf     []byte
	dropped int  // bytes dropped because buf was full
	fresh   bool // data arrived since the last flush
	// heldSince is when an incomplete UTF-8 sequence at the end of buf was first held
	// back waiting for the rest of its character.
	heldSince time.Time
}

// holdLimit is how long an incomplete UTF-8 sequence waits for the rest of its
// character before it is sent as it is.
const holdLimit = time.Second

// logLine is the wire form static/live.js expects; it has no id and is never replayed.
type logLine struct {
	Type   string `json:"type"`
	TaskID int64  `json:"task_id"`
	Chunk  string `json:"chunk"`
}

// PublishLog queues a chunk of a running task's output for every connected client. It
// never blocks and copies chunk. Chunks are coalesced: one message goes out at most
// every Options.LogFlush, carrying what every task wrote meanwhile (at most
// Options.LogMaxPending bytes per task; the rest is dropped and marked). A client
// whose queue is half full skips log messages, so logs never crowd out events or get a
// client dropped. With no client connected the chunk is discarded: logs are not
// replayed. The runner's OnLog hook calls it.
func (h *Hub) PublishLog(taskID int64, chunk []byte) {
	if len(chunk) == 0 || h.count.Load() == 0 {
		return
	}
	h.logMu.Lock()
	p := h.logPending[taskID]
	if p == nil {
		p = &pendingLog{}
		h.logPending[taskID] = p
		h.logOrder = append(h.logOrder, taskID)
	}
	n := min(len(chunk), max(h.opts.LogMaxPending-len(p.buf), 0))
	p.buf = append(p.buf, chunk[:n]...)
	p.dropped += len(chunk) - n
	p.fresh = true
	h.logMu.Unlock()
	select {
	case h.logWake <- struct{}{}:
	default:
	}
}

// logLoop flushes pending log output when some arrives, at most once per LogFlush.
func (h *Hub) logLoop(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.logWake:
		}
		if wait := h.opts.LogFlush - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		if held := h.flushLogs(); held {
			select {
			case h.logWake <- struct{}{}:
			default:
			}
		}
	}
}

// flushLogs sends the pending output of every task as one message and reports whether
// some bytes were held back (an incomplete UTF-8 sequence at the end of a task's output
// waits, up to holdLimit, for the rest of its character, so that a character split
// across writes is not mangled).
func (h *Hub) flushLogs() (held bool) {
	now := time.Now()
	h.logMu.Lock()
	pending, order := h.logPending, h.logOrder
	h.logPending, h.logOrder = map[int64]*pendingLog{}, nil
	var lines [][]byte
	for _, id := range order {
		p := pending[id]
		buf := p.buf
		if k := incompleteTail(buf); k > 0 && p.dropped == 0 && (p.fresh || now.Sub(p.heldSince) < holdLimit) {
			tail := append([]byte(nil), buf[len(buf)-k:]...)
			since := p.heldSince
			if since.IsZero() || p.fresh {
				since = now
			}
			h.logPending[id] = &pendingLog{buf: tail, heldSince: since}
			h.logOrder = append(h.logOrder, id)
			buf, held = buf[:len(buf)-k], true
		}
		chunk := string(buf)
		if p.dropped > 0 {
			chunk += "\n[… " + strconv.Itoa(p.dropped) + " bytes of output dropped …]\n"
		}
		if chunk == "" {
			continue
		}
		b, err := json.Marshal(logLine{Type: "log", TaskID: id, Chunk: chunk})
		if err != nil {
			continue // a struct of string and ints always encodes
		}
		lines = append(lines, b)
	}
	h.logMu.Unlock()
	if len(lines) == 0 {
		return held
	}
	m := &message{pm: prepare(joinEvents(lines)), log: true}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		// Sends happen only under h.mu, so the room seen here is still there.
		if len(c.send) < cap(c.send)/2 {
			c.send <- m
		}
	}
	return held
}

// incompleteTail returns the length of an unfinished UTF-8 sequence ending b, or 0.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}
