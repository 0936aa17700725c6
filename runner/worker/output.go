package worker

import (
	"os"
	"sync/atomic"
)

// output drains one of the worker's pipes through one fixed buffer into the log file,
// the live callback and the tail ring (each optional), so memory stays flat however
// much the worker prints.
type output struct {
	log      *os.File
	logErr   error // first log write failure; later chunks skip the log but still drain
	onOutput func([]byte)
	tail     *ring
	n        atomic.Int64  // read by Run while draining, to tell a slow drain from a stuck pipe
	done     chan struct{} // closed when drain returns; n, logErr, tail are then final
}

func newOutput(tailSize int, log *os.File, onOutput func([]byte)) *output {
	return &output{log: log, onOutput: onOutput, tail: newRing(tailSize), done: make(chan struct{})}
}

// drain reads until EOF or until Run sets a read deadline. It keeps reading after a log
// failure because a worker blocked on a full pipe would turn a disk problem into a hang.
func (o *output) drain(r *os.File) {
	defer close(o.done)
	buf := make([]byte, readBufSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			o.n.Add(int64(n))
			if o.log != nil && o.logErr == nil {
				if _, werr := o.log.Write(chunk); werr != nil {
					o.logErr = werr
				}
			}
			if o.tail != nil {
				o.tail.Write(chunk)
			}
			if o.onOutput != nil {
				o.onOutput(chunk)
			}
		}
		if err != nil {
			return
		}
	}
}

// ring keeps the last len(buf) bytes written to it.
type ring struct {
	buf  []byte
	pos  int  // next write position
	full bool // buf has wrapped at least once
}

func newRing(size int) *ring { return &ring{buf: make([]byte, size)} }

// Write stores p, overwriting the oldest bytes. It never fails.
func (r *ring) Write(p []byte) {
	size := len(r.buf)
	if len(p) >= size {
		copy(r.buf, p[len(p)-size:])
		r.pos, r.full = 0, true
		return
	}
	n := copy(r.buf[r.pos:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.pos = (r.pos + len(p)) % size
	if r.pos == 0 && len(p) > 0 {
		r.full = true
	}
}

// Bytes returns a copy of the retained bytes, oldest first.
func (r *ring) Bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.pos]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.pos:]...)
	return append(out, r.buf[:r.pos]...)
}
