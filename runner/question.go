package runner

import (
	"bytes"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// questionPrefix starts the last output line of a run that asks a person a question.
const questionPrefix = "QUESTION:"

// noteQuestion decides whether the run ended with a question on its last output line
// (`QUESTION: …`) and if so makes the attempt's outcome models.OutcomeQuestion: no
// check runs, no attempt is used, and the task waits for the answer. A run that timed
// out or was killed asks nothing: its checks decide. A question the run recorded
// through the API or MCP is found by the settle instead (askedDuring), which reads the
// task anyway.
func noteQuestion(ar *attemptRun) bool {
	if ar.res.TimedOut || ar.res.Signal != "" || ar.outcome != "" {
		return false
	}
	q := lastLineQuestion(ar.res.Tail)
	if q == "" {
		return false
	}
	ar.asked(q)
	return true
}

// asked makes the attempt's outcome the question q.
func (ar *attemptRun) asked(q string) {
	ar.outcome, ar.stage, ar.question = models.OutcomeQuestion, "", q
	ar.diagnosis = "the worker asked a person: " + contract.Truncate(q, 500)
}

// askedDuring turns a failed attempt into a question when the run recorded one
// (models.TaskService.AskQuestion) on t, the task as the settle locked it: a worker that
// asks and stops has not failed. A passed attempt stays passed: the work is done.
func askedDuring(t *models.Task, ar *attemptRun) {
	if ar.outcome != models.OutcomeFailed {
		return
	}
	if q := t.OpenQuestion(); q != nil && (q.Attempt == ar.num || q.Attempt == 0) {
		ar.asked(q.Text)
	}
}

// lastLineQuestion is the question on the last non-empty line of out, "" when that
// line does not start with questionPrefix.
func lastLineQuestion(out []byte) string {
	q, ok := lastLineAfter(out, questionPrefix)
	if !ok {
		return ""
	}
	return contract.Truncate(strings.TrimSpace(q), models.MaxQuestionBytes)
}

// lastLineAfter is what follows prefix on the last non-empty line of out, and whether
// that line (trimmed) starts with prefix: the one reading of a worker's closing line,
// for its question and its impossible claim alike.
func lastLineAfter(out []byte, prefix string) (string, bool) {
	out = bytes.TrimRight(out, " \t\r\n")
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return strings.CutPrefix(strings.TrimSpace(string(out)), prefix)
}
