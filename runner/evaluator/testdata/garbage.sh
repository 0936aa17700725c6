#!/bin/sh
# Answers in prose instead of a JSON verdict.
cat >/dev/null
echo "I think the output looks fine {mostly}."
