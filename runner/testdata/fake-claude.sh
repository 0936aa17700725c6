#!/bin/sh
# A stand-in for `claude -p --output-format stream-json --verbose`: it reads the brief
# and prints Claude Code's stream-json. With FAKE_CLAUDE=expensive it reports a costly
# API call and then keeps running, for the runner to stop.
cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"sess-1","model":"claude-sonnet-4-5"}'
if [ "$FAKE_CLAUDE" = expensive ]; then
	echo '{"type":"assistant","message":{"id":"msg_big","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Thinking hard."}],"usage":{"input_tokens":2000000,"output_tokens":10}}}'
	sleep 30
	exit 0
fi
echo '{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I will run the tests."},{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100,"output_tokens":20}}}'
echo '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu_1","content":"ok  calc 0.01s"}]}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"All done. TASK_COMPLETE","session_id":"sess-1","num_turns":2,"total_cost_usd":0.0123,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":7,"cache_creation_input_tokens":0}}'
