package gateway

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// heldBody is a call's request body on its way upstream while the worker still
// sends it. Bytes pass on as they arrive (and are kept, to be parsed), except the
// last one read, which is held back until the body has ended and the gateway has
// admitted the call: the upstream never has the whole of a request the gateway
// refused, so it cannot bill one, and a large body costs the call one hop instead
// of two (read all, then send all).
//
// Read is called by the transport's goroutine only; done is read by the handler's.
type heldBody struct {
	in       io.Reader
	max      int64
	buf      []byte // every byte read so far
	sent     int    // buf[:sent] went upstream
	admitted bool
	// holdNothing is the test switch that holds nothing back: the body goes whole
	// and is only then admitted.
	holdNothing bool
	// admit parses the whole body and reserves the call's worst case.
	admit func(body []byte) error
	// fail records why the call was refused; the proxy's error handler answers it.
	fail func(err error)
	done atomic.Bool // the worker's body was read to its end or failed
	// sentAll is set when Read has returned io.EOF: the transport has every byte
	// and holds none of buf, which may then go back to the pool.
	sentAll atomic.Bool
}

// bodyBuffers lends heldBody its buffers: a coding agent's calls are 10–500 KB each,
// and a fresh buffer per call made the garbage collector the gateway's largest cost
// at 100 KB. Buffers over maxPooledBody are left to the collector.
var bodyBuffers sync.Pool

// maxPooledBody is the largest buffer kept for reuse.
const maxPooledBody = 1 << 20

// buffer is a pooled buffer of at least size bytes, or nil when size is unknown or
// too large to pool.
func buffer(size int64) []byte {
	if size <= 0 || size+1 > maxPooledBody {
		return nil
	}
	if v, ok := bodyBuffers.Get().(*[]byte); ok && int64(cap(*v)) >= size+1 {
		return (*v)[:0]
	}
	return make([]byte, 0, max(size+1, 64<<10))
}

// release gives b's buffer back to the pool once the transport is done with it.
func (b *heldBody) release() {
	if !b.sentAll.Load() || cap(b.buf) > maxPooledBody {
		return
	}
	buf := b.buf[:0]
	b.buf = nil
	bodyBuffers.Put(&buf)
}

// newHeldBody holds the body of r's size (negative: unknown) of at most max bytes.
func newHeldBody(in io.Reader, size, max int64, admit func([]byte) error, fail func(error)) *heldBody {
	b := &heldBody{in: in, max: max, admit: admit, fail: fail}
	if size <= max {
		b.buf = buffer(size) // size+1: the read that finds the end
	}
	return b
}

// Read passes on what may go upstream, reading more of the worker's body when
// nothing may.
func (b *heldBody) Read(p []byte) (int, error) {
	for {
		end := len(b.buf)
		if !b.admitted && end > 0 && !b.holdNothing {
			end-- // the last byte waits for the call's admission
		}
		if b.sent < end {
			n := copy(p, b.buf[b.sent:end])
			b.sent += n
			return n, nil
		}
		if b.admitted {
			b.sentAll.Store(true)
			return 0, io.EOF
		}
		if err := b.fill(); err != nil {
			b.done.Store(true)
			b.fail(err)
			return 0, err
		}
	}
}

// fill reads more of the worker's body; at its end, it admits the call.
func (b *heldBody) fill() error {
	if len(b.buf) == cap(b.buf) {
		b.buf = slices.Grow(b.buf, max(len(b.buf), 32<<10))
	}
	n, err := b.in.Read(b.buf[len(b.buf):cap(b.buf)])
	b.buf = b.buf[:len(b.buf)+n]
	if int64(len(b.buf)) > b.max {
		return errTooLarge
	}
	switch {
	case err == io.EOF:
		b.done.Store(true)
		if b.holdNothing { // the test switch: the whole body goes, whatever admit says
			b.admitted = true
			if err := b.admit(b.buf); err != nil {
				b.fail(err)
			}
			return nil
		}
		if err := b.admit(b.buf); err != nil {
			return err
		}
		b.admitted = true
		return nil
	case err != nil:
		return fmt.Errorf("reading the request: %w", err)
	}
	return nil
}

// Close is a no-op: the worker's body belongs to the server, which closes it.
func (b *heldBody) Close() error { return nil }
