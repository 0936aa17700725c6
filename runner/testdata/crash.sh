#!/bin/sh
# Dies of SIGKILL mid-work, with every process of its group.
cat >/dev/null
echo "about to crash"
kill -9 0
