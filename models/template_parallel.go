package models

import (
	"strconv"

	"github.com/countersign/countersign/models/contract"
)

// validateParallel checks the steps' parallel groups: a group's name is like a role's
// (1-32 lower-case letters, digits, '_' or '-') and its steps are consecutive, so that
// "the step before the group" and "the step after it" mean one step each.
func validateParallel(steps []Step, fe *FieldErrors) {
	ended := map[string]bool{}
	for i, st := range steps {
		p := "steps[" + strconv.Itoa(i) + "].parallel"
		if st.Parallel == "" {
			continue
		}
		if !contract.ValidRole(st.Parallel) {
			fe.Add(p, "must be 1-32 lower-case letters, digits, '_' or '-'")
			continue
		}
		if i > 0 && steps[i-1].Parallel == st.Parallel {
			continue
		}
		if ended[st.Parallel] {
			fe.Add(p, "group "+quote(st.Parallel)+" must be consecutive steps: an earlier step of it is separated from this one (rule "+RuleParallelConsecutive+")")
		}
		ended[st.Parallel] = true
	}
}

// Stages splits a template's steps into what runs one after the other: each stage is
// the 0-based indexes of one step, or of a parallel group's consecutive steps, which
// run at the same time. Every step of a stage waits for every step of the stage
// before it.
func Stages(steps []Step) [][]int {
	var out [][]int
	for i, st := range steps {
		if n := len(out); n > 0 && st.Parallel != "" && steps[i-1].Parallel == st.Parallel {
			out[n-1] = append(out[n-1], i)
			continue
		}
		out = append(out, []int{i})
	}
	return out
}

// StageOf returns the stage of steps holding the 0-based step index i (nil when i is
// out of range).
func StageOf(steps []Step, i int) []int {
	for _, s := range Stages(steps) {
		if i >= s[0] && i <= s[len(s)-1] {
			return s
		}
	}
	return nil
}
