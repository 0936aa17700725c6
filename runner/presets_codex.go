package runner

// CodexPreset runs OpenAI's Codex CLI (npm @openai/codex; .ci/run pins 0.171.0)
// non-interactively, against any server of OpenAI's Responses API named by base URL:
// a model gateway, OpenAI itself, or a test's scripted API.
//
// Command: `codex exec --json - ` reads the brief on stdin as the prompt and prints
// its events as JSON lines (thread.started, item.completed for each message and
// command, turn.completed with the turn's usage), which are the attempt's log; the
// final agent_message carries the done token the checks look for. --skip-git-repo-check
// because a task's workspace need not be a git repository; --ephemeral so that no
// session files pile up in the agent's home across attempts.
//
// Variables it reads:
//   - OPENAI_BASE_URL: the Responses API's base URL, …/v1 (Codex appends /responses);
//     https://api.openai.com/v1 when unset. Codex 0.171 ignores OPENAI_BASE_URL itself,
//     so the preset declares it as a model provider of its own (-c model_providers.
//     countersign={…, wire_api="responses"}): plain HTTPS streaming, no WebSocket
//     attempt first, and no login — the key is read from the environment.
//   - OPENAI_API_KEY: sent as the bearer token (the provider's env_key). Pass it by
//     name in the agent's PassEnv; its value is never written anywhere by the preset.
//   - OPENAI_MODEL: the model (--model), when set; otherwise Codex's default. A model
//     Codex has no metadata for gets plain function tools (exec_command …), one it
//     knows may get its newer tool forms; both work against a real API.
//   - HOME: Codex keeps its state in $HOME/.codex (CODEX_HOME), which the runner makes
//     the agent's own home, writable under confinement; CODEX_HOME may be passed to
//     move it, but it must exist and be writable.
//   - COUNTERSIGN_PERMISSION_MODE: when the runner confines the worker it is
//     bypassPermissions, and Codex runs its commands with --sandbox danger-full-access
//     (its own sandbox off: the runner's sandbox is the fence, and Codex's would nest
//     inside it); unconfined, Codex's own workspace-write sandbox is on.
//   - COUNTERSIGN_USAGE_FILE: where the usage goes (below).
//
// Usage: Codex reports the turn's tokens on its turn.completed line, counted as
// OpenAI counts (input including cached). The preset pipes the JSON lines through
// awk, which copies them to stdout unchanged and, at the end, writes the sum of the
// turn.completed lines to COUNTERSIGN_USAGE_FILE in the usage file's shape:
// input_tokens (uncached), cache_read_input_tokens, output_tokens (reasoning
// included), model (OPENAI_MODEL). Codex's exit status is kept through the pipe (in
// a file beside the usage file) and is the command's. The runner prices the tokens
// with its price table; Codex reports no cost. The usage file is the worker's word,
// as every worker's is: a metering gateway between Codex and the API is the check.
//
// Sandbox needs: read the install (the npm package's bin/codex.js runs node, which
// execs the native binary under node_modules/@openai/codex-linux-*/vendor), write the
// agent's home (~/.codex), a pseudo-terminal for exec_command (/dev/ptmx, /dev/pts),
// and connect to OPENAI_BASE_URL's port (443 is in the defaults; another port goes
// in the agent's sandbox.connect).
const CodexPreset = `s=workspace-write; [ "$COUNTERSIGN_PERMISSION_MODE" = bypassPermissions ] && s=danger-full-access; ` +
	`{ codex exec --json --skip-git-repo-check --ephemeral --sandbox "$s" ${OPENAI_MODEL:+--model "$OPENAI_MODEL"} ` +
	`-c model_provider=countersign ` +
	`-c "model_providers.countersign={name=\"Countersign\",base_url=\"${OPENAI_BASE_URL:-https://api.openai.com/v1}\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}" ` +
	`-; echo $? >"$COUNTERSIGN_USAGE_FILE.rc"; } | awk -v out="$COUNTERSIGN_USAGE_FILE" -v model="$OPENAI_MODEL" ` + codexUsageAwk +
	`; exit "$(cat "$COUNTERSIGN_USAGE_FILE.rc" 2>/dev/null || echo 1)"`

// codexUsageAwk is the awk program of CodexPreset: it prints every line as it comes
// (flushed, for the live log) and sums the usage of the turn.completed lines, which
// Codex prints with their type first, so that a message quoting one (escaped in its
// JSON string) never matches.
const codexUsageAwk = `'function n(k) { return match($0, "\"" k "\":[0-9]+") ? substr($0, RSTART + length(k) + 3) + 0 : 0 } ` +
	`{ print; fflush() } ` +
	`/^\{"type":"turn\.completed"/ { i += n("input_tokens"); c += n("cached_input_tokens"); o += n("output_tokens"); t++ } ` +
	`END { if (t) printf "{\"usage\":{\"input_tokens\":%d,\"cache_read_input_tokens\":%d,\"output_tokens\":%d},\"model\":\"%s\"}\n", i - c, c, o, model > out }'`
