#!/bin/sh
# Writes the output but never prints the done token.
cat >/dev/null
printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
echo "all finished"
