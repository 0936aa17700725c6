#!/bin/sh
# Claims completion while admitting a part needs a person.
cat >/dev/null
printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
echo "The deploy step requires manual approval in the console."
echo TASK_COMPLETE
