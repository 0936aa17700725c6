package gateway

import (
	"bytes"
	"encoding/json"
)

// The usage fields of the providers' responses. Private structs of just these
// fields rather than the SDKs' response types: the gateway decodes every streamed
// event that carries usage, and the SDK types would build the whole message (every
// content block) on each, where the gateway needs four integers.

// anthropicUsage is a Messages usage object. The fields are pointers because a
// message_delta's usage carries only what changed: a field it has replaces the
// message_start's (its counts are cumulative), one it lacks keeps it.
type anthropicUsage struct {
	Input      *int64 `json:"input_tokens"`
	Output     *int64 `json:"output_tokens"`
	CacheRead  *int64 `json:"cache_read_input_tokens"`
	CacheWrite *int64 `json:"cache_creation_input_tokens"`
}

// over returns t with the fields u has replaced.
func (u *anthropicUsage) over(t Tokens) Tokens {
	if u == nil {
		return t
	}
	for _, f := range []struct {
		src *int64
		dst *int64
	}{{u.Input, &t.Input}, {u.Output, &t.Output}, {u.CacheRead, &t.CacheRead}, {u.CacheWrite, &t.CacheWrite}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return t
}

// openaiUsage is a Responses usage object (input_tokens…) or a Chat one
// (prompt_tokens…); both count cached tokens inside the input.
type openaiUsage struct {
	Input         int64        `json:"input_tokens"`
	Output        int64        `json:"output_tokens"`
	InputDetails  cachedDetail `json:"input_tokens_details"`
	Prompt        int64        `json:"prompt_tokens"`
	Completion    int64        `json:"completion_tokens"`
	PromptDetails cachedDetail `json:"prompt_tokens_details"`
}

type cachedDetail struct {
	Cached int64 `json:"cached_tokens"`
}

// tokens brings u to the gateway's convention: input without the cached part.
func (u *openaiUsage) tokens() Tokens {
	in, out, cached := u.Input, u.Output, u.InputDetails.Cached
	if u.Prompt != 0 || u.Completion != 0 {
		in, out, cached = u.Prompt, u.Completion, u.PromptDetails.Cached
	}
	return Tokens{Input: in - cached, Output: out, CacheRead: cached}
}

// wireEvent is one streamed event (or a whole non-streamed response) as far as usage
// goes: Anthropic's message_start (message.usage) and message_delta (usage);
// OpenAI's Responses terminal events (response.usage) and Chat's last chunk (usage).
type wireEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	Usage json.RawMessage `json:"usage"`
	Resp  *struct {
		Usage *openaiUsage `json:"usage"`
	} `json:"response"`
}

// usageMeter follows one response's usage as its bytes pass.
type usageMeter struct {
	kind   kind
	tokens Tokens
	final  bool // the usage is complete: the call can be charged what it reports
}

var usageKey = []byte(`"usage"`)

// event takes one JSON document: a streamed event's data or a whole response.
func (m *usageMeter) event(data []byte) {
	if m.kind == kindGenerate {
		m.gemini(data)
		return
	}
	if !bytes.Contains(data, usageKey) {
		return
	}
	var e wireEvent
	if json.Unmarshal(data, &e) != nil {
		return
	}
	switch m.kind {
	case kindMessages:
		m.anthropic(&e)
	case kindResponses:
		m.responses(&e)
	case kindChat:
		m.chat(&e)
	}
}

// anthropic: a whole message or message_start sets the counts; message_delta
// (cumulative) updates them and closes the usage.
func (m *usageMeter) anthropic(e *wireEvent) {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			m.tokens = e.Message.Usage.over(Tokens{})
		}
	case "message_delta", "message":
		var u anthropicUsage
		if len(e.Usage) > 0 && json.Unmarshal(e.Usage, &u) == nil {
			m.tokens, m.final = u.over(m.tokens), true
		}
	}
}

// responses: a whole response, or the terminal event of a stream (completed,
// incomplete or failed: each carries the response with its usage).
func (m *usageMeter) responses(e *wireEvent) {
	switch e.Type {
	case "response.completed", "response.incomplete", "response.failed":
		if e.Resp != nil && e.Resp.Usage != nil {
			m.tokens, m.final = e.Resp.Usage.tokens(), true
		}
	case "", "response":
		var u openaiUsage
		if len(e.Usage) > 0 && !bytes.Equal(e.Usage, []byte("null")) && json.Unmarshal(e.Usage, &u) == nil {
			m.tokens, m.final = u.tokens(), true
		}
	}
}

// chat: a whole completion, or the stream's chunk with usage (the last, with
// include_usage; the others carry "usage": null).
func (m *usageMeter) chat(e *wireEvent) {
	var u openaiUsage
	if len(e.Usage) > 0 && !bytes.Equal(e.Usage, []byte("null")) && json.Unmarshal(e.Usage, &u) == nil {
		m.tokens, m.final = u.tokens(), true
	}
}
