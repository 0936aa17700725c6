package checks

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
)

// DoneToken passes when token appears in the output as a token of its own
// (case-sensitive: it is a protocol marker, and "TASK_COMPLETED" is not
// "TASK_COMPLETE"); fails when it is missing, since silent or implied completion is
// not completion; and is skipped when the contract names no token.
func DoneToken(output, token string) models.CheckResult {
	start := time.Now()
	token = strings.TrimSpace(token)
	if token == "" {
		return result(models.StageDoneToken, models.VerdictSkipped, "the contract names no done token", start)
	}
	if indexToken(output, token) >= 0 {
		return result(models.StageDoneToken, models.VerdictPass, "", start)
	}
	return result(models.StageDoneToken, models.VerdictFail, fmt.Sprintf(
		"done token %q not found in the worker's output (%d bytes); print %s on a line of its own once every part of the contract is met",
		token, len(output), token), start)
}
