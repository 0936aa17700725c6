#!/bin/sh
# Fails as a tool: prints a verdict-looking line but exits 1.
cat >/dev/null
echo '{"pass": true, "diagnosis": "ignored"}'
echo "rate limited, try later" >&2
exit 1
