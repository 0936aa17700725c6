package gateway

import (
	"bytes"
	"io"
	"sync"
)

// Limits on what the gateway keeps of a response to meter it.
const (
	// maxJSONBody is the most of a non-streamed response kept to read its usage; a
	// longer one passes through whole but is charged its reservation.
	maxJSONBody = 16 << 20
	// maxEventLine is the longest SSE line kept across reads (a Responses stream's
	// response.completed carries the whole response); a longer one is skipped.
	maxEventLine = 16 << 20
)

// meterBody passes an upstream response's body through unchanged while its meter
// reads the usage; it never holds bytes back, so a stream reaches the client as it
// arrives. Close reports the usage once, final or not.
type meterBody struct {
	rc     io.ReadCloser
	meter  usageMeter
	stream bool
	buf    []byte // non-stream: the body so far; stream: the unfinished line
	over   bool   // buf outgrew its limit and was dropped
	once   sync.Once
	done   func(t Tokens, final bool)
}

// Read reads from the upstream and shows the bytes to the meter.
func (b *meterBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		if b.stream {
			b.lines(p[:n])
		} else {
			b.keep(p[:n], maxJSONBody)
		}
	}
	if err == io.EOF && !b.stream && !b.over {
		b.meter.event(b.buf)
	}
	return n, err
}

// Close closes the upstream body and settles the call.
func (b *meterBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() { b.done(b.meter.tokens, b.meter.final) })
	return err
}

// keep appends p to buf unless that passes limit, which drops buf for good.
func (b *meterBody) keep(p []byte, limit int) {
	if b.over {
		return
	}
	if len(b.buf)+len(p) > limit {
		b.buf, b.over = nil, true
		return
	}
	b.buf = append(b.buf, p...)
}

// lines feeds each complete SSE data line in p to the meter; an unfinished line is
// kept for the next read. Lines complete within p are read in place, not copied.
func (b *meterBody) lines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.keep(p, maxEventLine)
			return
		}
		line := p[:i]
		if len(b.buf) > 0 || b.over {
			b.keep(line, maxEventLine)
			line = b.buf
		}
		if !b.over {
			b.dataLine(line)
		}
		b.buf, b.over = b.buf[:0], false
		p = p[i+1:]
	}
}

var dataPrefix = []byte("data:")

// dataLine meters one SSE line if it is a data line.
func (b *meterBody) dataLine(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if rest, ok := bytes.CutPrefix(line, dataPrefix); ok {
		b.meter.event(bytes.TrimSpace(rest))
	}
}
