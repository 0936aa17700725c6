package scriptedapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// NewChat starts a scripted OpenAI Chat Completions API answering as model with
// turns: its URL ends in /v1, the base URL a client appends /chat/completions to. It
// stops when t ends.
func NewChat(t testing.TB, model string, turns ...Turn) *Server {
	return start(t, "Chat Completions", model, "/v1", turns, func(s *Server) http.HandlerFunc { return s.serveChat })
}

// chatRequest is what a Chat Completions request says, as far as the script goes.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.notServed(w, r)
		return
	}
	s.sawKey(r)
	var req chatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var turn Turn
	n := -1
	if len(req.Tools) > 0 {
		var results []result
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, result{id: m.ToolCallID, text: string(m.Content)})
			}
		}
		turn, n = s.next(req.Stream, results)
	} else {
		turn = s.sideCall()
	}
	s.t.Logf("scripted Chat Completions API: model %s stream %v tools %d → text %d bytes, %d calls, usage %+v",
		req.Model, req.Stream, len(req.Tools), len(turn.Text), len(turn.Calls), turn.Usage)
	id, created := fmt.Sprintf("chatcmpl-%d", n+1), time.Now().Unix()
	finish := "stop"
	if len(turn.Calls) > 0 {
		finish = "tool_calls"
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": turn.Text}
		if len(turn.Calls) > 0 {
			msg["tool_calls"] = chatCalls(turn, n, false)
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": s.model,
			"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}}, "usage": chatUsage(turn.Usage)})
		return
	}
	e := startSSE(w)
	chunk := func(delta map[string]any, reason any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": reason}}}
	}
	e.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if turn.Text != "" {
		e.event("", chunk(map[string]any{"content": turn.Text}, nil))
	}
	for _, c := range chatCalls(turn, n, true) {
		e.event("", chunk(map[string]any{"tool_calls": []map[string]any{c}}, nil))
	}
	e.event("", chunk(map[string]any{}, finish))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		e.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.model,
			"choices": []any{}, "usage": chatUsage(turn.Usage)})
	}
	e.raw("[DONE]")
}

// chatCalls are a turn's tool calls as Chat Completions carries them; streamed, each
// has its index, as the deltas do. n numbers the ids.
func chatCalls(turn Turn, n int, streamed bool) []map[string]any {
	var out []map[string]any
	for i, c := range turn.Calls {
		call := map[string]any{"id": fmt.Sprintf("call_%d_%d", n+1, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": argsJSON(c)}}
		if streamed {
			call["index"] = i
		}
		out = append(out, call)
	}
	return out
}

// chatUsage is a usage as Chat Completions reports it.
func chatUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.Input,
		"completion_tokens":         u.Output,
		"total_tokens":              u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}
