package scriptedapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewGemini starts a scripted Gemini API answering as model with turns: its URL is
// the server's root, the base URL a client adds /v1beta/models/… to
// (GOOGLE_GEMINI_BASE_URL). It stops when t ends.
func NewGemini(t testing.TB, model string, turns ...Turn) *Server {
	return start(t, "Gemini", model, "", turns, func(s *Server) http.HandlerFunc { return s.serveGemini })
}

// geminiRequest is what a generateContent request says, as far as the script goes.
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMIMEType string `json:"responseMimeType"`
	} `json:"generationConfig"`
}

// offers reports whether the request offers function tools.
func (r *geminiRequest) offers() bool {
	for _, t := range r.Tools {
		if len(t.FunctionDeclarations) > 0 {
			return true
		}
	}
	return false
}

// results are the request's functionResponse parts, each named by its id or, lacking
// one, its place in the conversation.
func (r *geminiRequest) results() []result {
	var out []result
	for i, c := range r.Contents {
		for j, p := range c.Parts {
			if f := p.FunctionResponse; f != nil {
				id := f.ID
				if id == "" {
					id = fmt.Sprintf("%s@%d.%d", f.Name, i, j)
				}
				out = append(out, result{id: id, text: f.Name + ": " + string(f.Response)})
			}
		}
	}
	return out
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	_, action, _ := strings.Cut(rest, ":")
	if !ok || r.Method != http.MethodPost {
		s.notServed(w, r)
		return
	}
	s.sawKey(r)
	var req geminiRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	switch action {
	case "countTokens":
		writeJSON(w, map[string]any{"totalTokens": 0})
		return
	case "generateContent", "streamGenerateContent":
	default:
		s.notServed(w, r)
		return
	}
	stream := action == "streamGenerateContent"
	var turn Turn
	n := -1
	if req.offers() {
		turn, n = s.next(stream, req.results())
	} else {
		turn = s.sideCall()
		if strings.Contains(req.GenerationConfig.ResponseMIMEType, "json") {
			turn.Text = "{}" // a side call that asks for JSON gets JSON that says nothing
		}
	}
	s.t.Logf("scripted Gemini API: %s %s tools %v → text %d bytes, %d calls, usage %+v",
		rest, r.URL.RawQuery, req.offers(), len(turn.Text), len(turn.Calls), turn.Usage)
	if !stream {
		writeJSON(w, s.geminiResponse(n, geminiParts(turn), turn.Usage, true))
		return
	}
	// Streamed as the API does: the text first, then the calls, the last chunk with
	// the finish reason and the whole usage.
	e := startSSE(w)
	if turn.Text != "" && len(turn.Calls) > 0 {
		e.event("", s.geminiResponse(n, geminiParts(Turn{Text: turn.Text}), Usage{}, false))
		turn.Text = ""
	}
	e.event("", s.geminiResponse(n, geminiParts(turn), turn.Usage, true))
}

// geminiParts are a turn's parts: its text, then a functionCall per tool call.
func geminiParts(turn Turn) []map[string]any {
	var parts []map[string]any
	if turn.Text != "" {
		parts = append(parts, map[string]any{"text": turn.Text})
	}
	for _, c := range turn.Calls {
		var args map[string]any
		if json.Unmarshal([]byte(argsJSON(c)), &args) != nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	return parts
}

// geminiResponse is one GenerateContentResponse; the last of a reply has the finish
// reason and the usage.
func (s *Server) geminiResponse(n int, parts []map[string]any, u Usage, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	resp := map[string]any{"candidates": []map[string]any{cand}, "modelVersion": s.model, "responseId": fmt.Sprintf("resp-%d", n+1)}
	if last {
		cand["finishReason"] = "STOP"
		// Gemini counts thoughts apart from the candidates: the output is both.
		resp["usageMetadata"] = map[string]any{
			"promptTokenCount":        u.Input,
			"cachedContentTokenCount": u.Cached,
			"candidatesTokenCount":    u.Output - u.Reasoning,
			"thoughtsTokenCount":      u.Reasoning,
			"totalTokenCount":         u.Input + u.Output,
		}
	}
	return resp
}
