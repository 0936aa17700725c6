package models

import (
	"slices"
	"time"
)

// GoalProgressDays is the most days a goal's burn-down shows.
const GoalProgressDays = 30

// DayCount is a number of things on one UTC day.
type DayCount struct {
	Day time.Time
	N   int
}

// GoalProgressFacts are what the store counts for a goal's progress: tasks created
// per day, tasks done per day (verified, by their verification; cancelled, by their
// task.cancelled event), and the goal's failed attempts per stage.
type GoalProgressFacts struct {
	Created  []DayCount
	Done     []DayCount
	Failures map[string]int
}

// BurnDay is one day of a burn-down: the tasks left (created and not yet verified or
// cancelled) at the end of the day.
type BurnDay struct {
	Day  time.Time `json:"day"`
	Left int       `json:"left"`
}

// StageCount is how many of a goal's attempts failed at a stage.
type StageCount struct {
	Stage string `json:"stage"`
	Count int    `json:"count"`
}

// GoalProgress is a goal's burn-down and where its attempts fail.
type GoalProgress struct {
	BurnDown []BurnDay `json:"burn_down"`
	// Stages lists the failed attempts per stage, the work stages in the runner's
	// order (each of them, failures or none); TopStage is the stage with the most,
	// "" when no attempt failed.
	Stages   []StageCount `json:"stages"`
	TopStage string       `json:"top_stage"`
}

// ComputeGoalProgress builds the burn-down from the day of from (the goal's
// creation, or later) to now's day, at most GoalProgressDays days, and ranks the
// failing stages.
func ComputeGoalProgress(f GoalProgressFacts, from, now time.Time) GoalProgress {
	last := DayOf(now)
	first := DayOf(from)
	if earliest := last.AddDate(0, 0, -(GoalProgressDays - 1)); first.Before(earliest) {
		first = earliest
	}
	var p GoalProgress
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		end := d.AddDate(0, 0, 1)
		p.BurnDown = append(p.BurnDown, BurnDay{Day: d, Left: max(countBefore(f.Created, end)-countBefore(f.Done, end), 0)})
	}
	stages := slices.Clone(WorkStages)
	for s := range f.Failures {
		if !slices.Contains(stages, s) {
			stages = append(stages, s)
		}
	}
	slices.Sort(stages[len(WorkStages):])
	top := 0
	for _, s := range stages {
		n := f.Failures[s]
		p.Stages = append(p.Stages, StageCount{Stage: s, Count: n})
		if n > top {
			top, p.TopStage = n, s
		}
	}
	return p
}

// countBefore sums the counts of the days before end.
func countBefore(days []DayCount, end time.Time) int {
	n := 0
	for _, d := range days {
		if d.Day.Before(end) {
			n += d.N
		}
	}
	return n
}
