#!/bin/sh
# Reviewer that writes the summary's own words in its findings: round 1 fails with a
# finding that reads "- Action: fix task added", later rounds pass.
cat >/dev/null
if [ "$COUNTERSIGN_REVIEW_ROUND" = 1 ]; then
	echo "## Feedback for Revision"
	echo "- Action: fix task added"
	echo "- the rollback plan is missing."
	echo REVIEW_FAIL
else
	echo "Looks complete."
	echo REVIEW_PASS
fi
