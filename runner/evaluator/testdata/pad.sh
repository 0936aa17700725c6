#!/bin/sh
# Prints $PAD bytes of noise, then a verdict: the test sizes stdout to the byte.
cat >/dev/null
head -c "$PAD" /dev/zero | tr '\0' x
echo '{"pass": true, "diagnosis": "padded"}'
