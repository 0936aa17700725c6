package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// numberRange says the range of the Go number type t in words ("a whole number
// between -9223372036854775808 and 9223372036854775807"); "" for a type that is not
// a whole number. A JSON number outside it (or with a fraction) names it.
func numberRange(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("a whole number between %d and %d", int64(-1)<<(bits-1), int64(math.MaxInt64>>(64-bits)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number between 0 and %d", uint64(math.MaxUint64>>(64-t.Bits())))
	}
	return ""
}

// badTextField finds the first string of the JSON body that cannot be stored as text
// (see TextProblem): bytes that are not valid UTF-8, which encoding/json would
// replace with U+FFFD silently (what was stored would not be what was sent), or a
// NUL (\u0000), which PostgreSQL refuses in text. It names the field as the errors
// name fields ("contract.completion.path", "depends_on[2]", "body" for the whole; a
// bad key names its object) and says what is wrong; bad is false when every string
// is storable.
func badTextField(body []byte) (field, msg string, bad bool) {
	if !utf8.Valid(body) {
		first := int64(firstInvalid(body))
		field, _ = findString(body, func(start, end int64, _ string) bool { return first >= start && first < end })
		return field, "must be valid UTF-8 text", true
	}
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return "", "", false
	}
	field, bad = findString(body, func(_, _ int64, s string) bool { return strings.IndexByte(s, 0) >= 0 })
	return field, "must not contain a NUL byte", bad // unreadable JSON is the decoder's to report
}

// findString walks the JSON body token by token and names the field of the first
// string (key or value) that hit reports, given its byte span and decoded text. A body
// unreadable before such a string names the field it stopped in, with found false.
func findString(body []byte, hit func(start, end int64, s string) bool) (field string, found bool) {
	type frame struct {
		object    bool
		key       string
		index     int
		expectKey bool
	}
	var stack []frame
	path := func(frames []frame) string {
		var b []byte
		for _, f := range frames {
			if f.object {
				if len(b) > 0 {
					b = append(b, '.')
				}
				b = append(b, f.key...)
			} else {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(f.index), 10)
				b = append(b, ']')
			}
		}
		if len(b) == 0 {
			return "body"
		}
		return string(b)
	}
	// valueDone moves the enclosing container past a value that just ended.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].expectKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return path(stack), false // unreadable there: the enclosing field
		}
		end := dec.InputOffset()
		top := len(stack) - 1
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, frame{object: true, expectKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:top]
				valueDone()
			}
		case string:
			if top >= 0 && stack[top].object && stack[top].expectKey {
				if hit(start, end, tok) {
					return path(stack[:top]), true // a key that is not text: its object
				}
				stack[top].key, stack[top].expectKey = tok, false
				continue
			}
			if hit(start, end, tok) {
				return path(stack), true
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// firstInvalid is the offset of the first byte of b that is not part of valid UTF-8.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// JSONTextError is DecodeJSON's text check for a JSON body read elsewhere (the MCP
// endpoint's calls): nil when every string in body is storable text (see
// TextProblem), else an EINVALID error naming the first field that is not.
func JSONTextError(body []byte) error {
	if field, msg, bad := badTextField(body); bad {
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{field: msg}}
	}
	return nil
}

// ReadBody reads the whole request body and puts it back for the next reader: a
// body longer than MaxBodyBytes is 413 ETOOLARGE, one that breaks off EBADREQUEST.
func ReadBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, readError(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}
