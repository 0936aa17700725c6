#!/bin/sh
# Demo worker that always blocks: it claims completion while admitting that part of
# the work needs a person, which the contradiction check refuses.
cat >/dev/null
# Demo usage, reported the way any worker may: a Claude-Code-shaped message in
# $COUNTERSIGN_USAGE_FILE (made-up figures; the runner prices them).
printf '{"model":"claude-sonnet-4-5","num_turns":3,"usage":{"input_tokens":3100,"output_tokens":200}}' >"$COUNTERSIGN_USAGE_FILE"
sleep 1
printf 'Uploaded the guide to the staging bucket.\n' >"$COUNTERSIGN_OUTPUT_PATH"
echo "Publishing to production requires manual approval in the cloud console."
echo TASK_COMPLETE
