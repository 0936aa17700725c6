package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// wireRequest is the part of a request body the gateway reads: the model, whether
// it streams, and its output limit under each API's name. A private struct of these
// few fields, not the SDKs' request types: decoding a request through the SDK types
// builds every message and tool, for nothing the gateway uses (and topFields skips
// those without decoding them at all).
type wireRequest struct {
	Model               string `json:"model"`
	Stream              bool   `json:"stream"`
	MaxTokens           *int64 `json:"max_tokens"`            // Anthropic; Chat (legacy)
	MaxOutputTokens     *int64 `json:"max_output_tokens"`     // Responses
	MaxCompletionTokens *int64 `json:"max_completion_tokens"` // Chat
	N                   *int64 `json:"n"`                     // Chat: choices, each up to the limit
	Background          bool   `json:"background"`            // Responses: usage would arrive later, unseen
	// StreamOptions (Chat) is kept as members so that include_usage is matched
	// exactly, as the provider matches it (encoding/json would take "Include_Usage").
	StreamOptions map[string]json.RawMessage `json:"stream_options"`
}

// includesUsage reports whether a Chat request asks for its stream's usage.
func (w wireRequest) includesUsage() bool {
	return string(w.StreamOptions["include_usage"]) == "true"
}

// errTooLarge refuses a body over the gateway's limit.
var errTooLarge = errors.New("request body too large")

// readBody reads r's body, at most max bytes (ServeHTTP refuses a longer declared
// length before it gets here).
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > 0 && r.ContentLength <= max { // one allocation, not ReadAll's doubling
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, fmt.Errorf("reading the request: %w", err)
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if int64(len(body)) > max {
		return nil, errTooLarge
	}
	return body, nil
}

// requestFields are the top-level members parseRequest reads.
var requestFields = map[string]bool{"model": true, "stream": true, "max_tokens": true, "max_output_tokens": true,
	"max_completion_tokens": true, "n": true, "background": true, "stream_options": true}

// parseRequest reads what the gateway needs from a metered call's body, and where
// those members sit; an error says what is wrong in words the worker's client shows.
func parseRequest(k kind, body []byte) (wireRequest, map[string]span, error) {
	var w wireRequest
	fields, err := topFields(body, requestFields)
	if err != nil {
		return w, nil, err
	}
	for key, sp := range fields {
		if err := json.Unmarshal(sp.raw, w.field(key)); err != nil {
			return w, nil, fmt.Errorf("%s: %v", key, err)
		}
	}
	if w.Model == "" {
		return w, nil, errors.New("model: field required")
	}
	if k == kindResponses && w.Background {
		return w, nil, errors.New("background responses are not available through the Countersign gateway: their usage could not be metered")
	}
	return w, fields, nil
}

// field is where the member key decodes to.
func (w *wireRequest) field(key string) any {
	switch key {
	case "model":
		return &w.Model
	case "stream":
		return &w.Stream
	case "max_tokens":
		return &w.MaxTokens
	case "max_output_tokens":
		return &w.MaxOutputTokens
	case "max_completion_tokens":
		return &w.MaxCompletionTokens
	case "n":
		return &w.N
	case "background":
		return &w.Background
	}
	return &w.StreamOptions
}

// maxOutput is the request's output limit, the default when it sets none, times the
// choices a Chat call asks for.
func (w wireRequest) maxOutput(def int64) int64 {
	var out int64
	for _, p := range []*int64{w.MaxTokens, w.MaxOutputTokens, w.MaxCompletionTokens} {
		if p != nil && *p > out {
			out = *p // both Chat names set: the larger bounds the worst case
		}
	}
	if out == 0 {
		out = def
	}
	if w.N != nil && *w.N > 1 {
		out *= *w.N
	}
	return out
}

// withStreamUsage returns a streaming Chat request's body with stream_options
// .include_usage set, so the upstream ends the stream with a usage chunk the gateway
// can meter. The rest of the body is kept byte for byte: the member is spliced in
// (the body holds "stream", so the object is not empty) or its value replaced.
func withStreamUsage(body []byte, fields map[string]span) ([]byte, error) {
	sp, ok := fields["stream_options"]
	if !ok {
		open := bytes.IndexByte(body, '{') + 1
		return concat(body[:open], []byte(`"stream_options":{"include_usage":true},`), body[open:]), nil
	}
	opts := map[string]json.RawMessage{}
	if !bytes.Equal(sp.raw, []byte("null")) {
		if err := json.Unmarshal(sp.raw, &opts); err != nil {
			return nil, fmt.Errorf("stream_options: %v", err)
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	return concat(body[:sp.start], raw, body[sp.end:]), nil
}

// concat joins parts into a new slice.
func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}
