#!/bin/sh
# Reviewer: fails round 1 with feedback, passes later rounds.
cat >/dev/null
if [ "$COUNTERSIGN_REVIEW_ROUND" = 1 ]; then
	echo "## Feedback for Revision"
	echo "The summary misses the rollback plan."
	echo REVIEW_FAIL
else
	echo "Looks complete."
	echo REVIEW_PASS
fi
