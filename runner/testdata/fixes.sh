#!/bin/sh
# Fails the first attempt with a short output; on the revision it reads the
# diagnosis from its brief and writes a long enough output.
brief=$(cat)
if [ "$COUNTERSIGN_ATTEMPT" = 1 ]; then
	printf 'tiny' >"$COUNTERSIGN_OUTPUT_PATH"
	echo TASK_COMPLETE
	exit 0
fi
case "$brief" in
*"bytes long"*)
	printf 'This output is long enough to satisfy a min_length contract: it explains what was done, why, and how it was checked by the worker.\n' >"$COUNTERSIGN_OUTPUT_PATH"
	echo TASK_COMPLETE
	;;
*)
	echo "no diagnosis in my brief"
	exit 3
	;;
esac
