package runner

// GeminiPreset runs Google's Gemini CLI (npm @google/gemini-cli; .ci/run pins 0.61.0,
// which accepts Node 20) non-interactively against any server of the Gemini API
// (generateContent) named by base URL: a model gateway, Google's API, or a test's
// scripted API.
//
// Command: `gemini` with stdin not a terminal reads the brief from it as the prompt,
// runs headless, and with -o stream-json prints its own JSON lines (init, message,
// tool_use, tool_result, result with the run's stats), which are the attempt's log;
// the assistant's messages carry the done token the checks look for. The flag is
// spelled -o, not --output-format, on purpose: the runner decodes commands saying
// "--output-format stream-json" as Claude Code's stream, which Gemini CLI's is not.
// --skip-trust trusts the task's workspace for the run, which headless runs need.
//
// Variables it reads:
//   - GOOGLE_GEMINI_BASE_URL: the API's base URL (the CLI adds /v1beta/models/…);
//     Google's when unset.
//   - GEMINI_API_KEY: sent as x-goog-api-key. Pass it by name in the agent's PassEnv.
//   - GEMINI_MODEL: the model, when set; otherwise the CLI's default.
//   - HOME: the CLI keeps its settings and state in $HOME/.gemini, the agent's own
//     home. When the agent has no settings yet the preset writes one choosing the API
//     key as the way to authenticate (0.61.0 takes a set GOOGLE_GEMINI_BASE_URL to
//     mean an auth type, "gateway", that its own check then refuses as invalid; a
//     chosen auth type wins over the environment) and turning the CLI's usage
//     statistics off (on by default, sent to Google over 443, a default port). An
//     admin's own settings file is left as it is, and must then choose gemini-api-key.
//   - COUNTERSIGN_PERMISSION_MODE: bypassPermissions when the runner confines the
//     worker, and the CLI runs every tool (--approval-mode yolo: the runner's sandbox
//     is the fence); unconfined it may only edit (auto_edit).
//   - COUNTERSIGN_USAGE_FILE: where the usage goes (below).
//
// Usage: the result line's stats count the run's tokens: input_tokens (cached
// included), cached, input (uncached), output_tokens (the candidates', without the
// thoughts) and total_tokens (all of them). The preset pipes the lines through awk,
// which copies them to stdout unchanged and, at the end, writes the last result's
// counts to COUNTERSIGN_USAGE_FILE: input_tokens = input, cache_read_input_tokens =
// cached, output_tokens = total_tokens - input_tokens (thoughts included: Gemini
// bills them as output), and the model the init line names. The CLI's exit status is
// kept through the pipe and is the command's. The runner prices the tokens with its
// price table; the CLI reports no cost.
//
// Sandbox needs: read the install (bundle/gemini.js, run by node, and its chunks),
// write the agent's home (~/.gemini), connect to GOOGLE_GEMINI_BASE_URL's port (443 is
// in the defaults; another port goes in the agent's sandbox.connect).
const GeminiPreset = `m=auto_edit; [ "$COUNTERSIGN_PERMISSION_MODE" = bypassPermissions ] && m=yolo; ` +
	`[ -e "$HOME/.gemini/settings.json" ] || { mkdir -p "$HOME/.gemini" && ` +
	`echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}' >"$HOME/.gemini/settings.json"; }; ` +
	`{ gemini --approval-mode "$m" --skip-trust -o stream-json; echo $? >"$COUNTERSIGN_USAGE_FILE.rc"; } | awk -v out="$COUNTERSIGN_USAGE_FILE" ` +
	geminiUsageAwk + `; exit "$(cat "$COUNTERSIGN_USAGE_FILE.rc" 2>/dev/null || echo 1)"`

// geminiUsageAwk is the awk program of GeminiPreset: it prints every line as it comes
// (flushed, for the live log), takes the model from the init line and the counts from
// the last result line (the run's stats come before the per-model ones, so the first
// match of each name is the run's). Both lines start with their type, so a message
// quoting one (escaped in its JSON string) never matches.
const geminiUsageAwk = `'function n(k) { return match($0, "\"" k "\":[0-9]+") ? substr($0, RSTART + length(k) + 3) + 0 : 0 } ` +
	`{ print; fflush() } ` +
	`/^\{"type":"init"/ && match($0, /"model":"[^"]*"/) { model = substr($0, RSTART + 9, RLENGTH - 10) } ` +
	`/^\{"type":"result"/ { i = n("input"); c = n("cached"); o = n("total_tokens") - n("input_tokens"); t = 1 } ` +
	`END { if (t) printf "{\"usage\":{\"input_tokens\":%d,\"cache_read_input_tokens\":%d,\"output_tokens\":%d},\"model\":\"%s\"}\n", i, c, o, model > out }'`
