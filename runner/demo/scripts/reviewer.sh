#!/bin/sh
# Demo reviewer: writes its verdict as a signal file.
cat >/dev/null
sleep 1
printf '{"signal": "approved", "reasoning": "The guide covers every step in order and says what to do when one fails."}\n' >"$COUNTERSIGN_OUTPUT_PATH"
echo "Verdict written."
