#!/bin/sh
# Reviewer that never passes.
cat >/dev/null
echo "Still wrong."
echo REVIEW_FAIL
