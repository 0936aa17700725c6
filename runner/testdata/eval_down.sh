#!/bin/sh
# Evaluator command whose service is down.
cat >/dev/null
echo "connection refused" >&2
exit 1
