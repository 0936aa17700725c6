#!/bin/sh
# Writes an output that is too short.
cat >/dev/null
printf 'tiny' >"$COUNTERSIGN_OUTPUT_PATH"
echo TASK_COMPLETE
