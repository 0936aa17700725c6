#!/bin/sh
# Claims completion without writing anything.
cat >/dev/null
echo TASK_COMPLETE
