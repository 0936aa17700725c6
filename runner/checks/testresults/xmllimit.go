package testresults

import (
	"errors"
	"io"
	"strings"
)

// maxXMLRun bounds one run of character data, one attribute value, one CDATA
// section: beyond it xmlLimiter drops bytes, so that encoding/xml, which holds a
// whole text node or attribute in memory, never holds more. maxXMLMarkup bounds the
// rest of one tag (names, spaces, the number of attributes); beyond it the input is
// not a test report and reading stops with errMarkupTooLong.
const (
	maxXMLRun    = 16 << 10
	maxXMLMarkup = 64 << 10
)

var errMarkupTooLong = errors.New("an XML tag longer than 64 KiB")

const (
	xText    = iota
	xOpen    // just after '<': deciding between a tag, a comment and CDATA
	xTag     // inside a tag, a declaration or a processing instruction
	xQuoted  // inside a quoted attribute value
	xComment // inside <!-- -->: dropped
	xCDATA   // inside <![CDATA[ ]]>
)

// xmlLimiter passes XML through, cutting character data, attribute values and
// CDATA sections to maxXMLRun bytes (at a rune and entity boundary, so that what
// is left is still well-formed) and dropping comments.
type xmlLimiter struct {
	r       io.Reader
	buf     []byte
	state   int
	quote   byte
	run     int    // bytes of the current run kept
	markup  int    // bytes of the current tag
	open    []byte // bytes after '<' while xOpen
	ent     int    // >0 inside an entity reference: bytes of it so far
	kept    [2]bool
	last    [3]byte // the last three bytes in a comment or CDATA section
	err     error
	out     []byte // what the last chunk of input gave, at most 3 bytes a byte
	pending []byte // the part of out not yet read
}

func newXMLLimiter(r io.Reader) *xmlLimiter {
	return &xmlLimiter{r: r, buf: make([]byte, 16<<10), out: make([]byte, 0, 48<<10)}
}

func (x *xmlLimiter) Read(p []byte) (int, error) {
	for len(x.pending) == 0 {
		if x.err != nil {
			return 0, x.err
		}
		m, err := x.r.Read(x.buf)
		out := x.out[:0]
		for _, b := range x.buf[:m] {
			out = x.step(out, b)
			if x.err != nil {
				break
			}
		}
		x.out, x.pending = out, out
		if err != nil && x.err == nil {
			x.err = err
		}
	}
	n := copy(p, x.pending)
	x.pending = x.pending[n:]
	return n, nil
}

// content decides whether a byte of a bounded run is kept: the first maxXMLRun
// bytes, then only what finishes an entity reference or a rune.
func (x *xmlLimiter) content(b byte) bool {
	keep := x.run < maxXMLRun ||
		(x.ent > 0 && x.ent < 12) ||
		(b&0xC0 == 0x80 && x.kept[1])
	if keep {
		x.run++
	}
	switch {
	case b == '&' && keep:
		x.ent = 1
	case b == '&':
		x.ent = 0
	case b == ';' || b == ' ' || b == '\n':
		x.ent = 0
	case x.ent > 0:
		x.ent++
	}
	x.kept[0], x.kept[1] = x.kept[1], keep
	return keep
}

func (x *xmlLimiter) reset() {
	x.run, x.ent, x.kept, x.last = 0, 0, [2]bool{}, [3]byte{}
}

func (x *xmlLimiter) step(out []byte, b byte) []byte {
	switch x.state {
	case xText:
		if b == '<' {
			x.state, x.open, x.markup = xOpen, x.open[:0], 0
			return append(out, b)
		}
	case xOpen:
		x.open = append(x.open, b)
		out = append(out, b)
		switch s := string(x.open); {
		case s == "!--":
			x.state = xComment
			x.reset()
		case s == "![CDATA[":
			x.state = xCDATA
			x.reset()
		case !strings.HasPrefix("!--", s) && !strings.HasPrefix("![CDATA[", s):
			x.state = xTag
			return x.tagByte(out[:len(out)-1], b)
		}
		return out
	case xTag:
		return x.tagByte(out, b)
	case xQuoted:
		if b == x.quote {
			x.state = xTag
			return append(out, b)
		}
	case xComment:
		x.last = [3]byte{x.last[1], x.last[2], b}
		if x.last == [3]byte{'-', '-', '>'} {
			x.state = xText
			x.reset()
			return append(out, "-->"...)
		}
		return out
	case xCDATA:
		x.last = [3]byte{x.last[1], x.last[2], b}
		if x.last == [3]byte{']', ']', '>'} {
			x.state = xText
			bothKept := x.kept == [2]bool{true, true}
			x.reset()
			if bothKept {
				return append(out, b)
			}
			return append(out, "]]>"...)
		}
	}
	if x.content(b) {
		out = append(out, b)
	}
	return out
}

func (x *xmlLimiter) tagByte(out []byte, b byte) []byte {
	x.markup++
	if x.markup > maxXMLMarkup {
		x.err = errMarkupTooLong
		return out
	}
	switch b {
	case '"', '\'':
		x.state, x.quote = xQuoted, b
		x.reset()
	case '>':
		x.state = xText
		x.reset()
	}
	return append(out, b)
}
