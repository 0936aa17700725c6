#!/bin/sh
# Demo worker that always blocks: it claims completion while admitting that part of
# the work needs a person, which the contradiction check refuses.
cat >/dev/null
sleep 1
printf 'Uploaded the guide to the staging bucket.\n' >"$COUNTERSIGN_OUTPUT_PATH"
echo "Publishing to production requires manual approval in the cloud console."
echo TASK_COMPLETE
