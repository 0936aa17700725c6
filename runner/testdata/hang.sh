#!/bin/sh
# Never finishes on its own.
cat >/dev/null
echo "thinking"
sleep 30
