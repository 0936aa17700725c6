#!/bin/sh
# Writes a long enough output and claims completion.
cat >/dev/null
if [ -n "$COUNTERSIGN_OUTPUT_PATH" ]; then
	printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
fi
echo "wrote the output"
echo TASK_COMPLETE
