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
// builds every message and tool, several times the work, for nothing the gateway uses.
type wireRequest struct {
	Model               string         `json:"model"`
	Stream              bool           `json:"stream"`
	MaxTokens           *int64         `json:"max_tokens"`            // Anthropic; Chat (legacy)
	MaxOutputTokens     *int64         `json:"max_output_tokens"`     // Responses
	MaxCompletionTokens *int64         `json:"max_completion_tokens"` // Chat
	N                   *int64         `json:"n"`                     // Chat: choices, each up to the limit
	Background          bool           `json:"background"`            // Responses: usage would arrive later, unseen
	StreamOptions       *streamOptions `json:"stream_options"`        // Chat
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// errTooLarge refuses a body over the gateway's limit.
var errTooLarge = errors.New("request body too large")

// readBody reads r's body, at most max bytes.
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
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

// parseRequest reads what the gateway needs from a metered call's body; an error
// says what is wrong in words the worker's client shows.
func parseRequest(k kind, body []byte) (wireRequest, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return w, fmt.Errorf("the request body is not JSON: %v", err)
	}
	if w.Model == "" {
		return w, errors.New("model: field required")
	}
	if k == kindResponses && w.Background {
		return w, errors.New("background responses are not available through the Countersign gateway: their usage could not be metered")
	}
	return w, nil
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
// can meter. The other fields are kept byte for byte (json.RawMessage).
func withStreamUsage(body []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	opts := map[string]json.RawMessage{}
	if raw, ok := fields["stream_options"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, err
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	fields["stream_options"] = raw
	return json.Marshal(fields)
}
