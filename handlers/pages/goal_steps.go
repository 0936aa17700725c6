package pages

import (
	"cmp"
	"context"
	"slices"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/goal"
)

// goalRunTasks bounds the tasks the goal page reads to draw its workflow runs: the
// newest ones, which hold any run a person is following. Only their heads are read
// (ListTaskHeads): 1,000 full rows took ~45 ms on SQLite under load.
const goalRunTasks = 1000

// goalRuns lists the workflow runs of goal id step by step: each stage one step, or
// the steps of a parallel group side by side, each with its task's state and the fix
// tasks its artifact review added.
func (p *Pages) goalRuns(ctx context.Context, id int64) ([]goal.RunSteps, error) {
	st := p.svc.Store()
	tasks, err := st.ListTaskHeads(ctx, models.TaskFilter{GoalID: id, Limit: goalRunTasks})
	if err != nil {
		return nil, err
	}
	type key struct {
		run  int64
		step int
	}
	byStep := map[key]models.Task{}
	fixes := map[int64][]goal.FixCell{}
	var runIDs []int64
	for _, t := range tasks {
		if t.ReviewOf != nil {
			fixes[*t.ReviewOf] = append(fixes[*t.ReviewOf], goal.FixCell{ID: t.ID, Title: t.Title, State: string(t.State), Override: t.Override})
		}
		if t.RunID == nil || t.StepNum <= 0 {
			continue
		}
		if !slices.Contains(runIDs, *t.RunID) {
			runIDs = append(runIDs, *t.RunID)
		}
		byStep[key{*t.RunID, t.StepNum}] = t
	}
	slices.Sort(runIDs)
	type version struct {
		name string
		v    int
	}
	templates := map[version]*models.Template{} // runs of one template read it once
	var out []goal.RunSteps
	for _, rid := range runIDs {
		run, err := st.GetRun(ctx, rid)
		if err != nil {
			return nil, err
		}
		tv := version{run.TemplateName, run.TemplateVersion}
		tpl, ok := templates[tv]
		if !ok {
			if tpl, err = st.GetTemplate(ctx, run.TemplateName, run.TemplateVersion); err != nil {
				return nil, err
			}
			templates[tv] = tpl
		}
		rs := goal.RunSteps{ID: run.ID, Template: run.TemplateName, Version: run.TemplateVersion}
		for _, stage := range models.Stages(tpl.Steps) {
			row := goal.RunStage{}
			if len(stage) > 1 {
				row.Group = tpl.Steps[stage[0]].Parallel
			}
			for _, i := range stage {
				c := goal.StepCell{Step: i + 1, Name: tpl.Steps[i].Name, Role: tpl.Steps[i].Role}
				if t, ok := byStep[key{rid, i + 1}]; ok {
					c.TaskID, c.Name, c.State, c.Override = t.ID, t.Title, string(t.State), t.Override
					c.Fixes = fixes[t.ID]
					slices.SortFunc(c.Fixes, func(a, b goal.FixCell) int { return cmp.Compare(a.ID, b.ID) })
				}
				if c.Name == "" {
					c.Name = "Step " + itoa(int64(i+1))
				}
				row.Steps = append(row.Steps, c)
			}
			rs.Stages = append(rs.Stages, row)
		}
		out = append(out, rs)
	}
	return out, nil
}
