#!/bin/sh
# Load for the kill -9 test. Holds an exclusive lock on $2/<task id>.lock while it
# runs, so that two attempts of a task running at once are noticed (the second one
# appends "<task id> <attempt>" to $2/overlaps.txt and fails); sleeps $1 seconds;
# then appends "<task id> <attempt> <unix time in ns>" to $2/runs.txt (O_APPEND, one
# write).
cat >/dev/null
exec 9>>"$2/$COUNTERSIGN_TASK_ID.lock"
if ! flock -n 9; then
	echo "$COUNTERSIGN_TASK_ID $COUNTERSIGN_ATTEMPT" >>"$2/overlaps.txt"
	exit 3
fi
sleep "$1"
echo "$COUNTERSIGN_TASK_ID $COUNTERSIGN_ATTEMPT $(date +%s%N)" >>"$2/runs.txt"
