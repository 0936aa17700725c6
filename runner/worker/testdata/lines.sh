#!/bin/sh
# Prints "line 1" .. "line $1", odd lines on stdout and even ones on stderr, to check
# that both streams land, in order, in the tail and the log.
i=1
while [ "$i" -le "$1" ]; do
  if [ $((i % 2)) -eq 1 ]; then echo "line $i"; else echo "line $i" >&2; fi
  i=$((i + 1))
done
