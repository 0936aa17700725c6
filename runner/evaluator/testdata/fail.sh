#!/bin/sh
# Fails the output, answering inside a Markdown code fence.
cat >/dev/null
printf '```json\n{"pass": false, "diagnosis": "criterion 2 (error handling) is not addressed"}\n```\n'
