#!/bin/sh
# Ignores SIGTERM (inherited by its children too), so only SIGKILL ends it.
trap '' TERM
echo ready
echo "child $$"
while :; do sleep 0.05; done
