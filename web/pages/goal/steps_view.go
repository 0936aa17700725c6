package goal

// RunSteps is one workflow run of the goal, its steps in order.
type RunSteps struct {
	ID       int64
	Template string
	Version  int
	Stages   []RunStage
}

// RunStage is what runs at one time: one step, or the steps of a parallel group
// (Group names it), shown side by side.
type RunStage struct {
	Group string
	Steps []StepCell
}

// StepCell is one step of a run and its task; Fixes are the fix tasks its artifact
// review added.
type StepCell struct {
	Step   int // 1-based
	Name   string
	Role   string
	TaskID int64 // 0 when the step's task is gone
	State  string
	// Override: the step's task was accepted without passing its checks.
	Override bool
	Fixes    []FixCell
}

// FixCell is a review's fix task of a step.
type FixCell struct {
	ID       int64
	Title    string
	State    string
	Override bool // accepted without passing its checks
}

// stageID names a stage by its first step, for tests and links.
func (s RunStage) stageID() string {
	if len(s.Steps) == 0 {
		return ""
	}
	return itoa(int64(s.Steps[0].Step))
}
