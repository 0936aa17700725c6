package checks

import (
	"fmt"
	"time"

	"github.com/countersign/countersign/models"
)

// Process judges how the worker process ended: pass on a clean exit (status 0 within
// the timeout); fail when it timed out ("worker timed out after 30m") or exited with
// another status ("worker exited with status 3"). A negative exitCode means the
// process was ended by a signal rather than exiting.
func Process(exitCode int, timedOut bool, timeout time.Duration) models.CheckResult {
	start := time.Now()
	switch {
	case timedOut:
		return result(models.StageProcess, models.VerdictFail,
			fmt.Sprintf("worker timed out after %s and was stopped; finish within the time limit", FormatDuration(timeout)), start)
	case exitCode < 0:
		return result(models.StageProcess, models.VerdictFail,
			"worker was killed by a signal before it exited", start)
	case exitCode != 0:
		return result(models.StageProcess, models.VerdictFail,
			fmt.Sprintf("worker exited with status %d; it must exit with status 0 when the work is done", exitCode), start)
	}
	return result(models.StageProcess, models.VerdictPass, "", start)
}
