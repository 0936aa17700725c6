#!/bin/sh
# Records its environment, then passes.
cat >/dev/null
env > "$RECORD_DIR/env.txt"
echo '{"pass": true, "diagnosis": "recorded"}'
