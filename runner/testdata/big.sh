#!/bin/sh
# Prints $1 MiB of output.
cat >/dev/null
head -c "$(($1 * 1048576))" /dev/zero | tr '\0' 'x'
