#!/bin/sh
# Demo worker that always succeeds: writes a full output (when the contract names a
# file) and prints the done token. Task facts come only from the environment and the
# brief on stdin.
cat >/dev/null
# Demo usage, reported the way any worker may: a Claude-Code-shaped message in
# $COUNTERSIGN_USAGE_FILE (made-up figures; the runner prices them).
printf '{"model":"claude-sonnet-4-5","num_turns":3,"usage":{"input_tokens":12000,"output_tokens":900}}' >"$COUNTERSIGN_USAGE_FILE"
sleep 1
if [ -n "$COUNTERSIGN_OUTPUT_PATH" ]; then
	cat >"$COUNTERSIGN_OUTPUT_PATH" <<'OUT'
# Findings

Sign-ups drop most between the welcome e-mail and the first project: the e-mail
links to a page that asks for a credit card before the user has seen the product.
Recommendation: move the card request after the first project is created, and
measure the change with the existing funnel dashboard for two weeks.
OUT
fi
echo "Work written."
echo TASK_COMPLETE
