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
)

// metered reports whether calls of k cost tokens.
func (k kind) metered() bool { return k == kindMessages || k == kindResponses || k == kindChat }

// route is where one request goes.
type route struct {
	provider Provider
	kind     kind
}

// routeOf maps r to the endpoint it calls; false for one the gateway does not serve
// (batches, files, background responses' retrieval: calls it could not meter). The
// model list is both providers' /v1/models; Anthropic's clients send
// anthropic-version, OpenAI's do not.
func routeOf(r *http.Request) (route, bool) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		return route{Anthropic, kindMessages}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		return route{Anthropic, kindCount}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		return route{OpenAI, kindResponses}, true
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		return route{OpenAI, kindChat}, true
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		return route{providerGuess(r), kindModels}, true
	}
	return route{providerGuess(r), 0}, false
}

// providerGuess picks the error shape for a request the gateway cannot route.
func providerGuess(r *http.Request) Provider {
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" ||
		strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return Anthropic
	}
	return OpenAI
}
