#!/bin/sh
# Prints task facts passed through the environment. printf %s never re-parses them.
printf 'title=%s\n' "$COUNTERSIGN_TASK_TITLE"
printf 'id=%s\n' "$COUNTERSIGN_TASK_ID"
printf 'secret=%s\n' "${COUNTERSIGN_TEST_SECRET:-unset}"
