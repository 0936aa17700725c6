#!/bin/sh
# Passes, after checking that the request arrived on stdin; prints some chatter first.
input=$(cat)
case "$input" in
*'"evaluate"'*'"prompt"'*) ;;
*) echo "no request on stdin" >&2; exit 2 ;;
esac
echo "Evaluating..."
echo '{"pass": true, "diagnosis": "every criterion is met"}'
