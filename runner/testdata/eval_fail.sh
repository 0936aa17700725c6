#!/bin/sh
# Evaluator command that fails every output.
cat >/dev/null
echo '{"pass": false, "diagnosis": "criterion 2 (error handling) is not addressed"}'
