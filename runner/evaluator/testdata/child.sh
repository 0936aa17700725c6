#!/bin/sh
# Leaves a background child holding stdout and records its pid; then answers, or with
# MODE=hang never does.
cat >/dev/null
sleep 60 &
echo $! > "$RECORD_DIR/child.pid"
if [ "$MODE" = hang ]; then sleep 60; fi
echo '{"pass": true, "diagnosis": "answered"}'
