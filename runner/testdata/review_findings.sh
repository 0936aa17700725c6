#!/bin/sh
# Reviewer that never passes: two findings naming the round it is in.
cat >/dev/null
echo "## Feedback for Revision"
echo "- Round $COUNTERSIGN_REVIEW_ROUND: the rollback plan is missing."
echo "- Round $COUNTERSIGN_REVIEW_ROUND: the error table has no owner column."
echo REVIEW_FAIL
