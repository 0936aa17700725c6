package gateway

import (
	"net/http"
	"strings"
)

// kind is what an endpoint does, which decides how the gateway meters it.
type kind int

const (
	kindMessages  kind = iota // Anthropic Messages: metered
	kindCount                 // Anthropic count_tokens: free, forwarded unmetered
	kindModels                // model list: free, forwarded unmetered
	kindResponses             // OpenAI Responses: metered
	kindChat                  // OpenAI Chat Completions: metered
	kindGenerate              // Gemini generateContent and streamGenerateContent: metered
)

// metered reports whether calls of k cost tokens.
func (k kind) metered() bool {
	return k == kindMessages || k == kindResponses || k == kindChat || k == kindGenerate
}

// route is where one request goes.
type route struct {
	provider Provider
	kind     kind
	model    string // Gemini: the model the path names (its bodies do not)
}

// geminiPrefix starts every Gemini API path the gateway serves.
const geminiPrefix = "/v1beta/models"

// routeOf maps r to the endpoint it calls; false for one the gateway does not serve
// (batches, files, background responses' retrieval, Gemini's batch and cached
// contents: calls it could not meter). The model list is both providers' /v1/models;
// Anthropic's clients send anthropic-version, OpenAI's do not. Gemini's calls are
// under /v1beta/models.
func routeOf(r *http.Request) (route, bool) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		return route{provider: Anthropic, kind: kindMessages}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		return route{provider: Anthropic, kind: kindCount}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		return route{provider: OpenAI, kind: kindResponses}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		return route{provider: OpenAI, kind: kindChat}, true
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		return route{provider: providerGuess(r), kind: kindModels}, true
	case strings.HasPrefix(r.URL.Path, geminiPrefix):
		return geminiRoute(r)
	}
	return route{provider: providerGuess(r)}, false
}

// geminiRoute maps a Gemini API request: POST /v1beta/models/{model}:generateContent
// and :streamGenerateContent (metered), :countTokens (free), GET /v1beta/models and
// GET /v1beta/models/{model} (the model list and one model's card, free).
func geminiRoute(r *http.Request) (route, bool) {
	no := route{provider: Gemini}
	rest := strings.TrimPrefix(r.URL.Path, geminiPrefix)
	if rest == "" || rest == "/" {
		return route{provider: Gemini, kind: kindModels}, r.Method == http.MethodGet
	}
	model, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), ":")
	if model == "" || strings.Contains(model, "/") || !strings.HasPrefix(rest, "/") {
		return no, false
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		return route{provider: Gemini, kind: kindModels, model: model}, true
	case r.Method != http.MethodPost:
		return no, false
	case action == "generateContent" || action == "streamGenerateContent":
		return route{provider: Gemini, kind: kindGenerate, model: model}, true
	case action == "countTokens":
		return route{provider: Gemini, kind: kindCount, model: model}, true
	}
	return no, false
}

// providerGuess picks the error shape for a request the gateway cannot route.
func providerGuess(r *http.Request) Provider {
	if r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Has("key") || strings.HasPrefix(r.URL.Path, "/v1beta/") {
		return Gemini
	}
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" ||
		strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return Anthropic
	}
	return OpenAI
}
