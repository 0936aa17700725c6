package runner

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// impossibleOff switches off noticing a worker's impossible claim, for the test that
// shows what noticing it changes: without it the claim is output like any other and
// the checks judge the attempt.
var impossibleOff bool

// maxSignalRead bounds what is read of a signal file for its impossible field: a
// signal is a small JSON object, and a larger file is judged by the mechanical check.
const maxSignalRead = 64 << 10

// noteImpossible decides whether the worker said its task cannot be done as
// specified — on its last output line (`IMPOSSIBLE: …`) or, for a signal contract, in
// the signal file's impossible field — and if so makes the attempt's outcome
// models.OutcomeImpossible at stage models.StageImpossible: no check runs, nothing is
// landed, and the settle blocks the task for a person (models/impossible.go). A run
// that timed out, was killed or was already given an outcome (a budget stop) said
// nothing: its checks decide. It is the worker's word only, taken as it is.
func noteImpossible(t *models.Task, ar *attemptRun) bool {
	if impossibleOff || ar.res.TimedOut || ar.res.Signal != "" || ar.outcome != "" {
		return false
	}
	reason := lastLineImpossible(ar.res.Tail)
	if reason == "" {
		reason = signalImpossible(t, ar)
	}
	if reason == "" {
		return false
	}
	ar.outcome, ar.stage, ar.impossible = models.OutcomeImpossible, models.StageImpossible, reason
	ar.diagnosis = "the worker said the task cannot be done as specified: " + contract.Truncate(reason, 500)
	return true
}

// lastLineImpossible is the reason on the last non-empty line of out, "" when that
// line does not start with contract.ImpossiblePrefix or gives no reason.
func lastLineImpossible(out []byte) string {
	reason, ok := lastLineAfter(out, contract.ImpossiblePrefix)
	if !ok {
		return ""
	}
	return impossibleReason(reason)
}

// signalImpossible is the reason in the signal file's impossible field when t's
// contract is a signal contract and the file holds a JSON object with a
// non-empty string there; "" otherwise (a missing or malformed file is the mechanical
// check's to judge). The file is read through the workspace's safe open, as every
// worker output is.
func signalImpossible(t *models.Task, ar *attemptRun) string {
	if ar.outAbs == "" || ar.ws == nil || expandedCompletion(t).Type != contract.CompletionSignal {
		return ""
	}
	f, err := ar.ws.Open(ar.outAbs)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSignalRead))
	if err != nil {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return ""
	}
	var reason string
	if json.Unmarshal(obj[contract.ImpossibleField], &reason) != nil {
		return ""
	}
	return impossibleReason(reason)
}

// impossibleReason trims a claim's reason and bounds it as a question is bounded; ""
// when nothing is left.
func impossibleReason(s string) string {
	return contract.Truncate(strings.TrimSpace(clean(s)), models.MaxQuestionBytes)
}
