#!/bin/sh
# Worker for the developer role: a review's fix task (its brief tells of a failed
# artifact review) takes its time, long enough to be cancelled while it runs; anything
# else writes a long enough output at once. Both claim completion.
brief=$(cat)
case "$brief" in
*"The artifact review of task"*)
	sleep 5
	echo "fixed by task $COUNTERSIGN_TASK_ID" >>"$COUNTERSIGN_OUTPUT_PATH"
	;;
*)
	printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
	;;
esac
echo TASK_COMPLETE
