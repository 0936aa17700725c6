// Package gateway is Countersign's model gateway: the only way a worker reaches a
// model. It is a reverse proxy for Anthropic's Messages API (POST /v1/messages, and
// /v1/messages/count_tokens unmetered), OpenAI's Responses (POST /v1/responses)
// and Chat Completions (POST /v1/chat/completions) APIs, and Google's Gemini API
// (POST /v1beta/models/{model}:generateContent and :streamGenerateContent;
// :countTokens and the model list unmetered), streamed or not.
//
// Each attempt gets a credential from [Gateway.Issue]; its client sends it as its API
// key. The gateway swaps it for the provider's real key upstream-side, so the key
// never enters a sandbox, and refuses a dead or unknown credential in the provider's
// own error shape. Every call's tokens are read from the provider's response as it
// passes (streams are never held back), priced with the configured price table, and
// added to the credential's [Metered]. A call reserves its worst case against the
// credential's caps before it is forwarded and settles to its metered cost after, so
// concurrent attempts under one shared cap cannot spend past it; a call without room
// is refused in the shape that makes the provider's clients stop rather than retry.
//
// [Service] serves a Gateway over HTTP. docs/gateway.md has the details and figures.
package gateway
