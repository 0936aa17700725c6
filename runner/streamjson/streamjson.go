// Package streamjson decodes the output of Claude Code run as
// `claude -p --output-format stream-json --verbose`: one JSON object per line
// (a system "init" message, "assistant" and "user" messages carrying content
// blocks, and a final "result" message). It turns that stream into a readable
// log, and keeps the numbers a runner needs — the final result and the usage so
// far — so that a run can be judged, and stopped when it passes its budget,
// without re-reading the transcript.
//
// The stream is untrusted: it is whatever the worker's process printed. The
// decoder therefore never panics, never drops a line it does not understand
// (it is passed through unchanged), and never buffers more than MaxLine bytes.
package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
)

// MaxLine is the longest line the decoder buffers. A longer line is not
// decoded: its bytes are passed through to the log as they arrive, so a worker
// that prints without newlines cannot make the decoder's memory grow.
const MaxLine = 1 << 20

// summaryMax bounds, in bytes, the one-line summaries of tool inputs and
// results: the log is for a reader skimming a run, and the full text is in the
// transcript.
const summaryMax = 200

// maxTrackedIDs bounds the message ids remembered for counting usage once per
// API call. The lines of one call come together (or interleaved with a few
// concurrent subagents), so a window of recent ids suffices; the bound keeps a
// hostile stream of distinct ids from growing memory without limit.
const maxTrackedIDs = 4096

// synthetic is the model Claude Code puts on assistant messages it makes up
// itself (API errors, "No response requested."): no API call, no model.
const synthetic = "<synthetic>"

// Final is the run's final "result" message. Each pointer is nil when the
// message lacks that field (or it is not a valid non-negative number): the
// decoder never reports a made-up zero.
type Final struct {
	// Text is the final answer ("result"); empty when absent, as it is on
	// error subtypes.
	Text string
	// Subtype is "success", "error_max_turns", "error_during_execution",
	// "error_max_budget_usd", … as Claude Code reports it.
	Subtype string
	// IsError is true when the message says is_error or its subtype starts
	// with "error": a run that ended on an error is never taken for a success,
	// even if one of the two fields is missing.
	IsError bool
	// SessionID is the result's session_id, or the init message's when the
	// result has none.
	SessionID string
	// Model is the model of the main conversation: the last one named by the
	// init message or a main-thread assistant message (subagents' and
	// synthetic messages are not counted), or else the single key of the
	// result's modelUsage; empty when none of those says.
	Model string
	// Turns is num_turns.
	Turns *int
	// CostUSD is total_cost_usd: Claude Code's client-side estimate.
	CostUSD *float64
	// InputTokens, OutputTokens, CacheReadTokens and CacheWriteTokens are the
	// result's usage: input_tokens, output_tokens, cache_read_input_tokens and
	// cache_creation_input_tokens.
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens *int64
}

// Usage is the token usage of the assistant messages seen so far, each API
// call (message id) counted once. It is a running estimate for enforcing a
// budget before the run ends; the final result's usage is authoritative.
type Usage struct {
	// Model is the main conversation's model as far as seen (see Final.Model).
	Model string
	// InputTokens, OutputTokens, CacheReadTokens and CacheWriteTokens sum
	// message.usage over distinct message ids. When lines of one id report
	// different numbers (an earlier line written mid-stream), the largest of
	// each is counted.
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	// Calls counts the distinct message ids that carried usage (an assistant
	// message without an id counts as a call of its own).
	Calls int
}

// Decoder is an io.Writer that receives Claude Code's stream-json stdout in
// chunks split anywhere (inside a line or a UTF-8 rune), writes a readable
// rendering of each complete line to its log, and records the final result
// and the running usage. One goroutine may Write while others call Result and
// Running.
type Decoder struct {
	mu     sync.Mutex
	log    io.Writer
	logErr error // the log's first write error; later writes are skipped

	buf []byte // the current line's bytes, at most MaxLine
	raw bool   // inside a line longer than MaxLine, passed through as it comes

	sessionID string // from the init message
	model     string // main conversation's model, last seen

	final     Final
	haveFinal bool

	usage Usage
	perID map[string]*[4]int64 // largest usage seen per message id
	ids   []string             // perID's keys, oldest first, for eviction
}

// New returns a Decoder writing its rendering to log (nil: discarded).
func New(log io.Writer) *Decoder {
	if log == nil {
		log = io.Discard
	}
	return &Decoder{log: log, perID: make(map[string]*[4]int64)}
}

// Write consumes a chunk of the stream. It always returns len(p), nil: a log
// that fails must not stop the caller from draining the worker's stdout (a
// worker blocked on a full pipe would hang), nor keep the result from being
// recorded. Close reports the log's first error.
func (d *Decoder) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if d.raw {
			if i < 0 {
				d.emit(p)
				break
			}
			d.emit(p[:i+1])
			d.raw = false
			p = p[i+1:]
			continue
		}
		if i < 0 {
			if len(d.buf)+len(p) > MaxLine {
				// Too long to decode: pass what we have through and the rest
				// of the line as it arrives.
				d.emit(d.buf)
				d.emit(p)
				d.resetBuf()
				d.raw = true
				break
			}
			d.buf = append(d.buf, p...)
			break
		}
		if len(d.buf)+i > MaxLine {
			d.emit(d.buf)
			d.emit(p[:i+1])
			d.resetBuf()
			p = p[i+1:]
			continue
		}
		line := p[:i]
		if len(d.buf) > 0 {
			d.buf = append(d.buf, line...)
			line = d.buf
		}
		d.handleLine(line, true)
		d.resetBuf()
		p = p[i+1:]
	}
	return n, nil
}

// Close handles a final line that has no newline and returns the log's first
// write error, if any. Calling it again is harmless.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.raw = false
	if len(d.buf) > 0 {
		d.handleLine(d.buf, false)
		d.resetBuf()
	}
	return d.logErr
}

// Result returns the final result message and true once one has been seen
// (the last one, should there be several); false before that, or when the run
// ended without one (a crash, a kill, a timeout). The returned pointers are
// the caller's own.
func (d *Decoder) Result() (Final, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.haveFinal {
		return Final{}, false
	}
	f := d.final
	f.Turns = clonePtr(f.Turns)
	f.CostUSD = clonePtr(f.CostUSD)
	f.InputTokens = clonePtr(f.InputTokens)
	f.OutputTokens = clonePtr(f.OutputTokens)
	f.CacheReadTokens = clonePtr(f.CacheReadTokens)
	f.CacheWriteTokens = clonePtr(f.CacheWriteTokens)
	return f, true
}

// Running returns the usage accumulated so far from the assistant messages.
func (d *Decoder) Running() Usage {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.usage
	u.Model = d.model
	return u
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// resetBuf empties the line buffer, giving back a large one so that a single
// long line does not pin its memory for the rest of the run.
func (d *Decoder) resetBuf() {
	if cap(d.buf) > 64<<10 {
		d.buf = nil
		return
	}
	d.buf = d.buf[:0]
}

// emit writes to the log until it first fails.
func (d *Decoder) emit(b []byte) {
	if d.logErr != nil || len(b) == 0 {
		return
	}
	if _, err := d.log.Write(b); err != nil {
		d.logErr = err
	}
}

func (d *Decoder) emitLine(s string) {
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	d.emit([]byte(s))
}

// passThrough writes a line that is not a stream-json message unchanged.
func (d *Decoder) passThrough(line []byte, newline bool) {
	d.emit(line)
	if newline {
		d.emit([]byte{'\n'})
	}
}

type object = map[string]json.RawMessage

// handleLine renders one line (without its newline) and records what it says.
func (d *Decoder) handleLine(line []byte, newline bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		d.passThrough(line, newline)
		return
	}
	var m object
	if json.Unmarshal(trimmed, &m) != nil {
		d.passThrough(line, newline)
		return
	}
	typ, _ := getString(m, "type")
	switch typ {
	case "system":
		d.system(m)
	case "assistant":
		d.assistant(m)
	case "user":
		d.user(m)
	case "result":
		d.result(m)
	case "stream_event":
		// Partial-message deltas (--include-partial-messages): the complete
		// assistant message follows, and is what the log shows.
	case "":
		// JSON, but not a stream-json message: someone else's output.
		d.passThrough(line, newline)
	default:
		sub, _ := getString(m, "subtype")
		d.emitLine(oneLine(strings.TrimSpace("· " + truncate(typ, 64) + " " + truncate(sub, 64))))
	}
}

func (d *Decoder) system(m object) {
	sub, _ := getString(m, "subtype")
	if sub != "init" {
		d.emitLine(oneLine(strings.TrimSpace("· system " + truncate(sub, 64))))
		return
	}
	id, _ := getString(m, "session_id")
	model, _ := getString(m, "model")
	if id != "" {
		d.sessionID = id
	}
	if model != "" && model != synthetic {
		d.model = model
	}
	d.emitLine(oneLine(fmt.Sprintf("session %s · model %s", orQ(id), orQ(model))))
}

func (d *Decoder) assistant(m object) {
	msg := getObject(m, "message")
	model, _ := getString(msg, "model")
	// Subagents (Task/Agent) report with parent_tool_use_id set and may use
	// another model; the run's model is the main conversation's.
	main := isNull(m["parent_tool_use_id"])
	if model != "" && model != synthetic && main {
		d.model = model
	}
	if u := getObject(msg, "usage"); u != nil && model != synthetic {
		id, _ := getString(msg, "id")
		d.addUsage(id, u)
	}
	if s, ok := getString(msg, "content"); ok {
		if strings.TrimSpace(s) != "" {
			d.emitLine(s)
		}
		return
	}
	for _, raw := range getArray(msg, "content") {
		var b object
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch t, _ := getString(b, "type"); t {
		case "text":
			if s, _ := getString(b, "text"); strings.TrimSpace(s) != "" {
				d.emitLine(s)
			}
		case "tool_use", "server_tool_use":
			name, _ := getString(b, "name")
			d.emitLine(toolLine(name, b["input"]))
		}
		// thinking and redacted_thinking are private reasoning, not the log's.
	}
}

func (d *Decoder) user(m object) {
	msg := getObject(m, "message")
	// A string content is the prompt (or a replayed user message): the
	// runner knows it already.
	for _, raw := range getArray(msg, "content") {
		var b object
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		if t, _ := getString(b, "type"); t != "tool_result" {
			continue
		}
		s := "← "
		if e, _ := getBool(b, "is_error"); e {
			s += "(error) "
		}
		d.emitLine(s + resultSummary(b["content"]))
	}
}

func (d *Decoder) result(m object) {
	var f Final
	f.Subtype, _ = getString(m, "subtype")
	isErr, _ := getBool(m, "is_error")
	f.IsError = isErr || strings.HasPrefix(f.Subtype, "error")
	f.Text, _ = getString(m, "result")
	f.SessionID, _ = getString(m, "session_id")
	if f.SessionID == "" {
		f.SessionID = d.sessionID
	}
	f.Model = d.model
	if f.Model == "" {
		if mu := getObject(m, "modelUsage"); len(mu) == 1 {
			for k := range mu {
				f.Model = k
			}
		}
	}
	if n, ok := getCount(m, "num_turns"); ok && n <= math.MaxInt32 {
		t := int(n)
		f.Turns = &t
	}
	if c, ok := getFloat(m, "total_cost_usd"); ok && c >= 0 {
		f.CostUSD = &c
	}
	if u := getObject(m, "usage"); u != nil {
		f.InputTokens = countPtr(u, "input_tokens")
		f.OutputTokens = countPtr(u, "output_tokens")
		f.CacheReadTokens = countPtr(u, "cache_read_input_tokens")
		f.CacheWriteTokens = countPtr(u, "cache_creation_input_tokens")
	}
	d.final, d.haveFinal = f, true

	turns, cost := "?", "?"
	if f.Turns != nil {
		turns = fmt.Sprint(*f.Turns)
	}
	if f.CostUSD != nil {
		cost = fmt.Sprintf("%.4f", *f.CostUSD)
	}
	s := fmt.Sprintf("result: %s, %s turns, $%s", orQ(f.Subtype), turns, cost)
	if isErr && !strings.HasPrefix(f.Subtype, "error") {
		s += " (error)"
	}
	d.emitLine(oneLine(s))
}

// addUsage counts one assistant line's usage. Claude Code writes one line per
// content block of an API response, all with the response's message id and
// its usage; counting every line would multiply the tokens. Each id is counted
// once, raised to the largest numbers any of its lines reports.
func (d *Decoder) addUsage(id string, u object) {
	var v [4]int64
	for i, k := range [4]string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		v[i], _ = getCount(u, k)
	}
	if id == "" {
		// Nothing to deduplicate by: over-counting is the safer error for a
		// budget.
		d.usage.Calls++
		d.addTokens(v)
		return
	}
	prev, ok := d.perID[id]
	if !ok {
		if len(d.ids) >= maxTrackedIDs {
			delete(d.perID, d.ids[0])
			d.ids = d.ids[1:]
		}
		d.perID[id] = &v
		d.ids = append(d.ids, id)
		d.usage.Calls++
		d.addTokens(v)
		return
	}
	var delta [4]int64
	for i := range v {
		if v[i] > prev[i] {
			delta[i] = v[i] - prev[i]
			prev[i] = v[i]
		}
	}
	d.addTokens(delta)
}

func (d *Decoder) addTokens(v [4]int64) {
	d.usage.InputTokens = satAdd(d.usage.InputTokens, v[0])
	d.usage.OutputTokens = satAdd(d.usage.OutputTokens, v[1])
	d.usage.CacheReadTokens = satAdd(d.usage.CacheReadTokens, v[2])
	d.usage.CacheWriteTokens = satAdd(d.usage.CacheWriteTokens, v[3])
}

// satAdd adds two non-negative counts without wrapping to a negative total
// (a hostile stream could report huge numbers).
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
