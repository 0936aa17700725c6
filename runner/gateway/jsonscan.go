package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The gateway reads a handful of top-level fields from request bodies that run to
// hundreds of kilobytes (a coding agent's whole conversation). encoding/json
// validates and then walks every byte of every message to find them; this scanner
// walks only the top level and skips each string with bytes.IndexByte, a few
// times faster (BenchmarkAddedLatency/100KB). It does not validate what it skips:
// the provider parses the same bytes and refuses, unbilled, a body that is not
// JSON, and for a body that is, the top-level fields found here are the ones it
// reads. A wanted field that appears twice is refused, since parsers differ on
// which one counts.

// span is a top-level member: its value's raw bytes and where they sit in the body.
type span struct {
	raw        []byte
	start, end int
}

// topFields returns the raw values of the wanted top-level members of the JSON
// object body, by key (escapes in keys decoded).
func topFields(body []byte, wanted map[string]bool) (map[string]span, error) {
	s := &scan{b: body}
	out := map[string]span{}
	if !s.expect('{') {
		return nil, errors.New("the request body is not a JSON object")
	}
	if s.expect('}') {
		return out, nil
	}
	for {
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		if !s.expect(':') {
			return nil, fmt.Errorf("the request body is not JSON: no ':' after %q", key)
		}
		s.ws()
		start := s.i
		if err := s.value(); err != nil {
			return nil, err
		}
		if wanted[key] {
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("the request names %q twice", key)
			}
			out[key] = span{raw: body[start:s.i], start: start, end: s.i}
		}
		if s.expect('}') {
			return out, nil
		}
		if !s.expect(',') {
			return nil, errors.New("the request body is not JSON: a member is not followed by ',' or '}'")
		}
	}
}

// scan is a position in a JSON text.
type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// expect consumes c (after white space) if it is next.
func (s *scan) expect(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads a member's name.
func (s *scan) key() (string, error) {
	s.ws()
	start := s.i
	if err := s.str(); err != nil {
		return "", err
	}
	raw := s.b[start:s.i]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("the request body is not JSON: %v", err)
	}
	return k, nil
}

var errNotJSON = errors.New("the request body is not JSON")

// str skips a string starting at s.i.
func (s *scan) str() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return errNotJSON
	}
	j := s.i + 1
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return errNotJSON
		}
		j += k
		n := 0 // backslashes before the quote: an odd count escapes it
		for p := j - 1; p > s.i && s.b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			s.i = j
			return nil
		}
	}
}

// value skips one value starting at s.i.
func (s *scan) value() error {
	if s.i >= len(s.b) {
		return errNotJSON
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		return s.nested()
	}
	start := s.i
	for s.i < len(s.b) && bytes.IndexByte([]byte(",}] \t\n\r"), s.b[s.i]) < 0 {
		s.i++
	}
	if s.i == start {
		return errNotJSON
	}
	return nil
}

// nested skips an object or array, strings inside it whole.
func (s *scan) nested() error {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return errNotJSON
}
