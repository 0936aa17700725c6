#!/bin/sh
# Fails with a distinctive status after writing to both streams.
echo "to stdout"
echo "to stderr" >&2
exit 3
