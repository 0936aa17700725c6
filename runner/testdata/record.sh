#!/bin/sh
# No-op worker: appends "<task id> <attempt>" to the file $1 (O_APPEND, one write).
cat >/dev/null
echo "$COUNTERSIGN_TASK_ID $COUNTERSIGN_ATTEMPT" >>"$1"
