#!/bin/sh
# Exits at once but leaves a background process holding stdout open.
sleep 100 &
echo "child $!"
exit 0
