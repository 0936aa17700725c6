#!/bin/sh
# Writes a signal file with the signal given as $1.
cat >/dev/null
printf '{"signal": "%s", "reasoning": "looked at it"}\n' "$1" >"$COUNTERSIGN_OUTPUT_PATH"
echo TASK_COMPLETE
