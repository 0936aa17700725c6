package models

import (
	"context"
	"fmt"
)

// PreviewStepTask returns the task that step i of t would become if a run of t were
// started now: the same title, brief and contract StartRun builds (criteria of an
// auto contract generated with the saved project rules), numbered id so that paths
// with {task_id} read as they would. Nothing is stored and no role is checked: it is
// what the template editor shows beside a step. Params are not applied ({{name}}
// stays as typed). An invalid step is refused with the task's field errors.
func (s *TemplateService) PreviewStepTask(ctx context.Context, t *Template, i int, id int64) (*Task, error) {
	if t == nil || i < 0 || i >= len(t.Steps) {
		return nil, NotFound("template step", fmt.Sprint(i+1))
	}
	rules, err := s.Rules(ctx)
	if err != nil {
		return nil, err
	}
	spec := stepSpec(t.Steps[i], i, 0, nil)
	spec.GoalID = nil
	task, err := spec.build(rules, s.now())
	if err != nil {
		return nil, err
	}
	task.ID, task.StepNum = id, i+1
	return task, nil
}
