package runner

// QwenPreset is the generic preset for a model served by any OpenAI-compatible Chat
// Completions API: it runs Qwen Code (npm @qwen-code/qwen-code; .ci/run pins 0.15.10,
// the newest release that accepts Node 20), a maintained coding agent CLI that talks
// Chat Completions to OPENAI_BASE_URL whatever the model is (vLLM, Ollama, OpenRouter,
// a model gateway, OpenAI itself).
//
// Command: `qwen --auth-type openai` reads the brief on stdin as the prompt (one-shot,
// non-interactive) and, with --output-format stream-json, prints the same stream-json
// as Claude Code (system init, assistant and user messages with content blocks and
// per-message usage, a final result), which the runner decodes as it does the claude
// preset's: the readable log, the final answer the checks read, the usage, and the
// running usage a budget is enforced with. --no-chat-recording keeps no transcript in
// the agent's home.
//
// Variables it reads:
//   - OPENAI_BASE_URL: the API's base URL, …/v1 (Qwen Code appends /chat/completions).
//   - OPENAI_API_KEY: sent as the bearer token. Pass it by name in the agent's PassEnv.
//   - OPENAI_MODEL: the model, required (Qwen Code has no default for this auth type).
//   - HOME: Qwen Code keeps its settings and state in $HOME/.qwen, the agent's own home.
//     When the agent has no settings yet the preset writes one that turns Qwen Code's
//     usage statistics off (they are on by default and go to Qwen's servers over 443,
//     a default port); an admin's own settings file is left as it is.
//   - COUNTERSIGN_PERMISSION_MODE: bypassPermissions when the runner confines the
//     worker, and Qwen Code runs every tool (--approval-mode yolo: the runner's sandbox
//     is the fence); unconfined it may only edit files (auto-edit), its shell calls
//     refused for want of anyone to approve them.
//
// Usage: each assistant message carries the usage of its API call and the result the
// run's sum, in Claude Code's field names. Qwen Code passes the API's prompt_tokens
// as input_tokens, which counts the cached tokens it also reports as
// cache_read_input_tokens (Claude's input_tokens does not): the runner, reading them
// as Claude's, counts cached tokens twice, priced once as input — an over-count, on the
// safe side of a budget, until the runner learns the convention per preset.
//
// Sandbox needs: read the install (cli.js is one bundle that node runs), write the
// agent's home (~/.qwen), connect to OPENAI_BASE_URL's port (443 is in the defaults;
// another port goes in the agent's sandbox.connect).
const QwenPreset = `m=auto-edit; [ "$COUNTERSIGN_PERMISSION_MODE" = bypassPermissions ] && m=yolo; ` +
	`[ -e "$HOME/.qwen/settings.json" ] || { mkdir -p "$HOME/.qwen" && echo '{"privacy":{"usageStatisticsEnabled":false}}' >"$HOME/.qwen/settings.json"; }; ` +
	`qwen --auth-type openai --approval-mode "$m" --output-format stream-json --no-chat-recording`
