#!/bin/sh
# Demo worker that fails its first attempt (the output is too short) and, on the
# revision, reads the runner's diagnosis from its brief and writes a full output.
brief=$(cat)
sleep 1
if [ "${COUNTERSIGN_ATTEMPT:-1}" = 1 ]; then
	printf '# Guide\n\nTODO\n' >"$COUNTERSIGN_OUTPUT_PATH"
	echo "Wrote a first draft."
	echo TASK_COMPLETE
	exit 0
fi
echo "The runner said:"
printf '%s\n' "$brief" | grep -m 1 'bytes long' || true
cat >"$COUNTERSIGN_OUTPUT_PATH" <<'OUT'
# Onboarding guide

1. Create your account and confirm the e-mail address.
2. Create a first project from the dashboard; the wizard suggests a template.
3. Invite two colleagues: projects are more useful shared.
4. Connect the repository so that every change is checked automatically.
5. Read the weekly summary, which lists what was verified and what is blocked.

Each step takes less than five minutes. If a step fails, the error message names
the field to fix; nothing is lost by trying again.
OUT
echo "Rewrote the guide in full."
echo TASK_COMPLETE
