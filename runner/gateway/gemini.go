package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Google's Gemini API (generativelanguage.googleapis.com, v1beta) as the gateway
// serves it. Its requests differ from the others' in three ways that matter here:
// the model is in the path, not the body; the key comes as x-goog-api-key or as the
// query parameter key; and a stream is asked for by the path (:streamGenerateContent),
// arriving as SSE with ?alt=sse and as one JSON array without.

// geminiRequestFields are the top-level members parseGemini reads: the output limit
// sits in generationConfig, which protobuf's JSON mapping also accepts in snake case.
var geminiRequestFields = map[string]bool{"generationConfig": true, "generation_config": true}

// geminiGenConfig is the part of a generationConfig the reservation needs.
type geminiGenConfig struct {
	MaxOutputTokens      *int64 `json:"maxOutputTokens"`
	MaxOutputTokensSnake *int64 `json:"max_output_tokens"`
	CandidateCount       *int64 `json:"candidateCount"`
	CandidateCountSnake  *int64 `json:"candidate_count"`
}

// parseGemini reads a generateContent body's output limit into a wireRequest (the
// model comes from the path); only generationConfig is decoded, the contents are
// skipped unread.
func parseGemini(model string, body []byte) (wireRequest, error) {
	w := wireRequest{Model: model}
	fields, err := topFields(body, geminiRequestFields)
	if err != nil {
		return w, err
	}
	for key, sp := range fields {
		var g geminiGenConfig
		if err := json.Unmarshal(sp.raw, &g); err != nil {
			return w, fmt.Errorf("%s: %v", key, err)
		}
		w.MaxOutputTokens = firstSet(g.MaxOutputTokens, g.MaxOutputTokensSnake, w.MaxOutputTokens)
		w.N = firstSet(g.CandidateCount, g.CandidateCountSnake, w.N)
	}
	if w.MaxOutputTokens != nil && *w.MaxOutputTokens < 0 {
		return w, fmt.Errorf("generationConfig.maxOutputTokens: %d is negative", *w.MaxOutputTokens)
	}
	return w, nil
}

// firstSet is the first non-nil of ps.
func firstSet(ps ...*int64) *int64 {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// geminiCredential is the credential a Gemini client sends: x-goog-api-key, or the
// query parameter key (the older clients' way).
func geminiCredential(r *http.Request) string {
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return strings.TrimSpace(k)
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}

// withoutKey returns u's raw query without its key parameters, the rest (alt=sse)
// kept as sent; unchanged when it has none.
func withoutKey(u *url.URL) string {
	if u.RawQuery == "" || !u.Query().Has("key") {
		return u.RawQuery
	}
	q := u.Query()
	q.Del("key")
	return q.Encode()
}

// geminiUsage is a usageMetadata object. Gemini counts the cached tokens inside the
// prompt's and the thoughts apart from the candidates'.
type geminiUsage struct {
	Prompt     int64 `json:"promptTokenCount"`
	Candidates int64 `json:"candidatesTokenCount"`
	Cached     int64 `json:"cachedContentTokenCount"`
	Thoughts   int64 `json:"thoughtsTokenCount"`
}

// tokens brings u to the gateway's convention: input without the cached part, output
// with the thoughts (billed as output).
func (u *geminiUsage) tokens() Tokens {
	return Tokens{Input: u.Prompt - u.Cached, CacheRead: u.Cached, Output: u.Candidates + u.Thoughts}
}

// geminiResponse is one GenerateContentResponse as far as usage goes.
type geminiResponse struct {
	Usage      *geminiUsage `json:"usageMetadata"`
	Candidates []struct {
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
}

// ended reports whether r is a reply's last: a candidate has finished, or the prompt
// was blocked (then no candidate comes).
func (r *geminiResponse) ended() bool {
	for _, c := range r.Candidates {
		if c.FinishReason != "" {
			return true
		}
	}
	return r.PromptFeedback != nil && r.PromptFeedback.BlockReason != ""
}

// geminiKeys are the members a chunk the meter decodes holds; the others pass undecoded.
var geminiKeys = [][]byte{[]byte(`"usageMetadata"`), []byte(`"finishReason"`), []byte(`"blockReason"`)}

// gemini takes one response, or a stream's chunk, or a stream without alt=sse (one
// JSON array of chunks). Each chunk may carry the usage so far: the last seen wins,
// and it is final once a chunk says the reply ended, so that a stream cut before its
// end is charged its reservation rather than the part counted so far.
func (m *usageMeter) gemini(data []byte) {
	if !bytes.Contains(data, geminiKeys[0]) && !bytes.Contains(data, geminiKeys[1]) && !bytes.Contains(data, geminiKeys[2]) {
		return
	}
	var chunks []geminiResponse
	if d := bytes.TrimSpace(data); len(d) > 0 && d[0] == '[' {
		if json.Unmarshal(d, &chunks) != nil {
			return
		}
	} else {
		var one geminiResponse
		if json.Unmarshal(d, &one) != nil {
			return
		}
		chunks = []geminiResponse{one}
	}
	for i := range chunks {
		c := &chunks[i]
		if c.Usage != nil {
			m.tokens = c.Usage.tokens()
		}
		// A last chunk without usage (the API sends it on every chunk) still closes
		// what the earlier ones counted.
		if c.ended() && (c.Usage != nil || m.tokens != (Tokens{})) {
			m.final = true
		}
	}
}
