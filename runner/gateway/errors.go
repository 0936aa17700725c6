package gateway

import (
	"encoding/json"
	"net/http"
)

// Provider names an API family; each answers refusals in its own error shape so that
// the worker's client reads them as it would the real provider's.
type Provider int

// The providers the gateway speaks.
const (
	Anthropic Provider = iota
	OpenAI
	Gemini // Google's Generative Language API (generateContent)
)

// String names the provider.
func (p Provider) String() string {
	switch p {
	case OpenAI:
		return "openai"
	case Gemini:
		return "gemini"
	}
	return "anthropic"
}

// refusal is why the gateway answered a call itself instead of forwarding it.
type refusal int

const (
	refuseAuth     refusal = iota // no, unknown or revoked credential
	refuseBudget                  // a cap has no room for the call's worst case
	refuseBadCall                 // the request is not one the gateway can meter
	refuseNotFound                // an endpoint the gateway does not serve
	refuseUpstream                // the upstream could not be reached
)

// creditTooLow is the message Anthropic sends when an account is out of credit; Claude
// Code recognises it and stops instead of retrying, which is what a spent budget wants.
const creditTooLow = "Your credit balance is too low to access the Anthropic API. "

// writeRefusal answers w in p's error shape. Budget refusals carry x-should-retry:
// false, which the Stainless-generated SDKs (Anthropic's and OpenAI's, every language)
// obey over the status code, so no client retries a spent budget.
//
// The shapes, chosen so a client stops cleanly:
//   - Anthropic, budget: 400 invalid_request_error "Your credit balance is too low…",
//     exactly what the real API answers an account without credit (the SDKs never
//     retry a 400; a 429 they would retry, and Claude Code backs off and retries 429s).
//   - OpenAI, budget: 429 insufficient_quota (type and code), what the real API
//     answers a spent quota; Codex treats insufficient_quota as final, and the header
//     stops the SDKs' retry of 429s.
//   - Gemini, budget: 400 FAILED_PRECONDITION (Google's status for a project whose
//     billing is not enabled). Gemini CLI 0.61.0 never retries a 400 (isRetryableError
//     returns false for it before any other test) and falls back to another model
//     only on a 429 it classes as a quota error or a 404; a 429 RESOURCE_EXHAUSTED
//     would be retried with backoff and then switch the run to a Flash model.
//   - credentials: 401 authentication_error (Anthropic) or invalid_request_error with
//     code invalid_api_key (OpenAI), as each provider answers a bad key; Gemini's
//     shape is {"error":{"code":401,"message":…,"status":"UNAUTHENTICATED"}}.
func writeRefusal(w http.ResponseWriter, p Provider, why refusal, msg string) {
	status, kind, code := refusalShape(p, why)
	var body any
	switch p {
	case Gemini:
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": kind}}
	case OpenAI:
		body = map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": code}}
	default:
		if why == refuseBudget {
			msg = creditTooLow + msg
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if why == refuseBudget || why == refuseAuth || why == refuseBadCall {
		h.Set("x-should-retry", "false")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// refusalShape is the status, error type (Gemini: its status name) and (OpenAI) code
// for why in p's shape.
func refusalShape(p Provider, why refusal) (status int, kind string, code any) {
	if p == Gemini {
		return geminiShape(why)
	}
	switch why {
	case refuseAuth:
		if p == OpenAI {
			return http.StatusUnauthorized, "invalid_request_error", "invalid_api_key"
		}
		return http.StatusUnauthorized, "authentication_error", nil
	case refuseBudget:
		if p == OpenAI {
			return http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota"
		}
		return http.StatusBadRequest, "invalid_request_error", nil
	case refuseNotFound:
		if p == OpenAI {
			return http.StatusNotFound, "invalid_request_error", "unknown_url"
		}
		return http.StatusNotFound, "not_found_error", nil
	case refuseUpstream:
		if p == OpenAI {
			return http.StatusBadGateway, "server_error", nil
		}
		return http.StatusBadGateway, "api_error", nil
	default:
		return http.StatusBadRequest, "invalid_request_error", nil
	}
}

// geminiShape is the HTTP status and Google RPC status name for why.
func geminiShape(why refusal) (int, string, any) {
	switch why {
	case refuseAuth:
		return http.StatusUnauthorized, "UNAUTHENTICATED", nil
	case refuseBudget:
		return http.StatusBadRequest, "FAILED_PRECONDITION", nil
	case refuseNotFound:
		return http.StatusNotFound, "NOT_FOUND", nil
	case refuseUpstream:
		return http.StatusBadGateway, "UNAVAILABLE", nil
	}
	return http.StatusBadRequest, "INVALID_ARGUMENT", nil
}
