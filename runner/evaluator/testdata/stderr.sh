#!/bin/sh
# Fails with a long stderr: 100000 bytes of "h", then 3000 of "e", then the reason.
cat >/dev/null
head -c 100000 /dev/zero | tr '\0' h >&2
head -c 3000 /dev/zero | tr '\0' e >&2
echo >&2
echo "evaluator: rate limited" >&2
exit 2
