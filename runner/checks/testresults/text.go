package testresults

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// boundName cuts a name longer than MaxNameBytes at a rune boundary and appends a
// hash of the whole name, so that cut names stay distinct and deterministic.
func boundName(name string) string {
	if len(name) <= MaxNameBytes {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	suffix := fmt.Sprintf("…#%016x", h.Sum64())
	return cutRunes(name, MaxNameBytes-len(suffix)) + suffix
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on a rune
// boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// printable replaces control characters (newlines, escapes) and invalid UTF-8 in s,
// for names and messages that end up in diagnoses and briefs.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return '�'
		}
		return r
	}, strings.ToValidUTF8(s, "�"))
}

// message collects the first lines of a failure within MaxMessageLines and
// MaxMessageBytes; it holds no more than that whatever it is given.
type message struct {
	b     strings.Builder
	lines int
	full  bool
}

// addLine appends one line (control characters replaced; blank lines before the
// first are dropped); beyond the bounds the message ends with "…" once.
func (m *message) addLine(line string) {
	if m.full || (m.lines == 0 && strings.TrimSpace(line) == "") {
		return
	}
	room := MaxMessageBytes - m.b.Len()
	if m.lines >= MaxMessageLines {
		if room >= len("\n…") {
			m.b.WriteString("\n…")
		}
		m.full = true
		return
	}
	cut := cutRunes(line, MaxMessageBytes)
	whole := len(cut) == len(line)
	line = printable(cut)
	if m.lines > 0 {
		line = "\n" + line
	}
	if whole && len(line) <= room {
		m.b.WriteString(line)
		m.lines++
		return
	}
	m.full = true
	if room >= len("…") {
		m.b.WriteString(cutRunes(line, room-len("…")))
		m.b.WriteString("…")
	}
}

// addText appends text that may hold several lines.
func (m *message) addText(text string) {
	for len(text) > 0 && !m.full {
		line, rest, _ := strings.Cut(text, "\n")
		m.addLine(strings.TrimRight(line, "\r"))
		text = rest
	}
}

func (m *message) String() string { return m.b.String() }

// lineReader reads lines of at most maxLineBytes; the rest of a longer line is
// read and dropped, so a line without end costs no memory.
type lineReader struct {
	br  *bufio.Reader
	lim *limitReader
}

func newLineReader(lim *limitReader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(lim, maxLineBytes), lim: lim}
}

// next returns the next line without its line ending; the slice is valid until the
// following call. ok is false at the end of the input. A last line without its
// newline is dropped when the input was cut, since it is a fragment.
func (l *lineReader) next() (line []byte, ok bool) {
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Too long: keep the first part (the buffer is reused by the next ReadSlice,
		// so copy it), drop the rest.
		kept := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			_, err = l.br.ReadSlice('\n')
		}
		if err != nil && l.lim.truncated {
			return nil, false
		}
		return kept, true
	}
	if err != nil {
		if len(line) == 0 || l.lim.truncated || err != io.EOF {
			return nil, false
		}
		return trimEOL(line), true
	}
	return trimEOL(line), true
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
