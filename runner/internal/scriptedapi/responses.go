package scriptedapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// NewResponses starts a scripted OpenAI Responses API answering as model with turns:
// its URL ends in /v1, the base URL a client appends /responses to. It stops when t
// ends.
func NewResponses(t testing.TB, model string, turns ...Turn) *Server {
	return start(t, "Responses", model, "/v1", turns, func(s *Server) http.HandlerFunc { return s.serveResponses })
}

// responsesRequest is what a Responses request says, as far as the script goes.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Tools  []json.RawMessage `json:"tools"`
	Input  json.RawMessage   `json:"input"`
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		s.notServed(w, r)
		return
	}
	s.sawKey(r)
	var req responsesRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var turn Turn
	n := -1
	if len(req.Tools) > 0 || offersTools(req.Input) {
		turn, n = s.next(req.Stream, responsesResults(req.Input))
	} else {
		turn = s.sideCall()
	}
	s.t.Logf("scripted Responses API: model %s stream %v tools %d → text %d bytes, %d calls, usage %+v",
		req.Model, req.Stream, len(req.Tools), len(turn.Text), len(turn.Calls), turn.Usage)
	items := responseItems(turn, n)
	resp := func(status string, output []map[string]any, usage any) map[string]any {
		return map[string]any{"id": fmt.Sprintf("resp_%d", n+1), "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": s.model, "output": output, "usage": usage}
	}
	done := resp("completed", items, responsesUsage(turn.Usage))
	if !req.Stream {
		writeJSON(w, done)
		return
	}
	e, seq := startSSE(w), 0
	send := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		e.event(typ, fields)
	}
	send("response.created", map[string]any{"response": resp("in_progress", []map[string]any{}, nil)})
	send("response.in_progress", map[string]any{"response": resp("in_progress", []map[string]any{}, nil)})
	for i, item := range items {
		streamItem(send, i, item)
	}
	send("response.completed", map[string]any{"response": done})
}

// responseItems are a turn's output items: a message with its text, then a
// function_call per tool call. n numbers the ids.
func responseItems(turn Turn, n int) []map[string]any {
	var items []map[string]any
	if turn.Text != "" {
		items = append(items, map[string]any{"id": fmt.Sprintf("msg_%d", n+1), "type": "message", "status": "completed", "role": "assistant",
			"content": []map[string]any{{"type": "output_text", "text": turn.Text, "annotations": []any{}}}})
	}
	for i, c := range turn.Calls {
		id, callID := fmt.Sprintf("fc_%d_%d", n+1, i), fmt.Sprintf("call_%d_%d", n+1, i)
		if input, ok := c.Args.(string); ok && c.Custom {
			items = append(items, map[string]any{"id": id, "type": "custom_tool_call", "status": "completed",
				"call_id": callID, "name": c.Name, "input": input})
			continue
		}
		items = append(items, map[string]any{"id": id, "type": "function_call", "status": "completed",
			"call_id": callID, "name": c.Name, "arguments": argsJSON(c)})
	}
	return items
}

// streamItem sends the events of one output item, as the API streams them: added
// (empty), the deltas of its text or arguments, their done, then the item done.
func streamItem(send func(string, map[string]any), i int, item map[string]any) {
	empty := map[string]any{}
	for k, v := range item {
		empty[k] = v
	}
	empty["status"] = "in_progress"
	id := item["id"]
	switch item["type"] {
	case "message":
		text := item["content"].([]map[string]any)[0]["text"].(string)
		empty["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": i, "item": empty})
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
		send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": text})
		send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
		part = map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
		send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
	case "function_call":
		args := item["arguments"].(string)
		empty["arguments"] = ""
		send("response.output_item.added", map[string]any{"output_index": i, "item": empty})
		send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": args})
		send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
	case "custom_tool_call":
		input := item["input"].(string)
		empty["input"] = ""
		send("response.output_item.added", map[string]any{"output_index": i, "item": empty})
		send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": input})
		send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": input})
	}
	send("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

// responsesUsage is a usage as the Responses API reports it.
func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.Cached},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          u.Input + u.Output,
	}
}

// offersTools reports whether a request's input offers tools in an item of its own
// (Codex does so, type additional_tools, for the models it knows) rather than in tools.
func offersTools(input json.RawMessage) bool {
	var items []struct {
		Type  string            `json:"type"`
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(input, &items) != nil {
		return false
	}
	for _, it := range items {
		if it.Type == "additional_tools" && len(it.Tools) > 0 {
			return true
		}
	}
	return false
}

// responsesResults are the function_call_output items of a request's input.
func responsesResults(input json.RawMessage) []result {
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(input, &items) != nil {
		return nil // a plain string: no results
	}
	var out []result
	for _, it := range items {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			out = append(out, result{id: it.CallID, text: string(it.Output)})
		}
	}
	return out
}
