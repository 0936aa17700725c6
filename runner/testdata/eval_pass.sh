#!/bin/sh
# Evaluator command that passes every output.
cat >/dev/null
echo '{"pass": true, "diagnosis": "meets the criteria"}'
