// Package scriptedapi serves scripted model APIs on 127.0.0.1, for running real agent
// CLIs (Codex, an OpenAI-compatible CLI, Gemini CLI) against a model that does what a
// test says: it calls the tools the script names, in order, and reports the token
// usage the script gives, so that a test can check what the CLI and the runner made of
// it (a file written, tokens summed) without a network or a real key.
//
// Three wire protocols are served, each with streaming as its real API streams:
//
//   - NewResponses: OpenAI's Responses API, POST {base}/responses with server-sent
//     events (response.created … response.output_item.done … response.completed,
//     whose response carries the usage). What `codex exec` speaks.
//   - NewChat: OpenAI's Chat Completions, POST {base}/chat/completions, streamed as
//     chat.completion.chunk events ending in data: [DONE], the usage in a last chunk
//     when the request asks for it (stream_options.include_usage), or whole.
//   - NewGemini: Google's Gemini API, POST {base}/v1beta/models/{model}:
//     streamGenerateContent?alt=sse (and :generateContent), each chunk a
//     GenerateContentResponse whose usageMetadata the last one completes.
//
// A request is a call of the agent's loop when it offers tools: it gets the script's
// next Turn (text, then tool calls), or, past the script, a short closing text with
// zero usage. A request that offers no tools is a side call (a title, a check a CLI
// makes of its own): it gets a short text with zero usage and is counted apart, so
// the script's sums are what the loop reported. Anything else is answered 404 and
// recorded, so that a failing test can say what the CLI asked for (Report).
//
// The servers are for tests: each stops with the test that started it.
package scriptedapi
