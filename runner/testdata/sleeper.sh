#!/bin/sh
# Sleeps $1 seconds on the first attempt, then records like record.sh into $2.
cat >/dev/null
if [ "$COUNTERSIGN_ATTEMPT" = 1 ]; then
	sleep "$1"
fi
echo "$COUNTERSIGN_TASK_ID $COUNTERSIGN_ATTEMPT" >>"$2"
