#!/bin/sh
# Answers like `claude -p --output-format json`: the model's text is in "result".
cat >/dev/null
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"Verdict:\n{\"pass\": false, \"diagnosis\": \"no tests for the null input\"}"}'
