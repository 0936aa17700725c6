package pages

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/pages/goal"
)

// goalProgress is the goal page's burn-down (one bar per day: the tasks left at its
// end) and its failing stages.
func (p *Pages) goalProgress(ctx context.Context, viewer *models.Agent, id int64) (*goal.Progress, error) {
	gp, err := p.svc.Stats.GoalProgress(ctx, viewer, id)
	if err != nil {
		return nil, err
	}
	out := &goal.Progress{Top: gp.TopStage, BurnDown: components.BarChart{TestID: "chart-burndown", Title: "Tasks left per day",
		LabelEvery: max(len(gp.BurnDown)/7, 1),
		Summary:    fmt.Sprintf("%d days; each bar is the goal's tasks not yet verified or cancelled at the end of the day.", len(gp.BurnDown))}}
	for _, d := range gp.BurnDown {
		out.BurnDown.Bars = append(out.BurnDown.Bars, dayBar(d.Day, components.ChartSegment{Kind: "left", Value: d.Left}))
	}
	for _, s := range gp.Stages {
		if s.Count == 0 {
			continue // a stage nothing failed at says nothing: only the failing ones are listed
		}
		out.Stages = append(out.Stages, goal.StageRow{Stage: s.Stage, Count: s.Count})
	}
	return out, nil
}
