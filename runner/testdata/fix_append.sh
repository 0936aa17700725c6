#!/bin/sh
# Worker for the developer role: a fix task (its brief tells of a failed artifact
# review) appends a line to the output it shares with the reviewed task; anything else
# sleeps $1 seconds when given and writes a long enough output. Both claim completion.
brief=$(cat)
case "$brief" in
*"The artifact review of task"*)
	echo "fixed by task $COUNTERSIGN_TASK_ID" >>"$COUNTERSIGN_OUTPUT_PATH"
	;;
*)
	if [ -n "$1" ]; then sleep "$1"; fi
	printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
	;;
esac
echo TASK_COMPLETE
