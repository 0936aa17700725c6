package models

// OutcomeImpossible is the outcome of an attempt whose worker said the task cannot be
// done as specified (a last line `IMPOSSIBLE: <reason>`, or the signal file's
// impossible field). It is neither a pass nor a failure: the task is not revised but
// goes to a person with the reason.
const OutcomeImpossible = "impossible"

// StageImpossible is the stage of an attempt, and of the task's block, that ended
// because its worker said the task is impossible as specified.
const StageImpossible = "impossible"
