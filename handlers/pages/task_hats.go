package pages

import (
	"context"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/task"
)

// taskHats lists the hats each participant wore on t, from its events and its
// current parts (models.WornOn), in the order they first took part; the runner wears
// none.
func (p *Pages) taskHats(ctx context.Context, t *models.Task, events []models.Event, dir *directory) ([]task.HatWearer, error) {
	pilot, err := models.PilotOf(ctx, p.svc.Store(), t)
	if err != nil {
		return nil, err
	}
	worn := models.WornOn(t, events, pilot)
	var order []int64
	seen := map[int64]bool{}
	add := func(id *int64) {
		if id != nil && !seen[*id] && len(worn[*id]) > 0 {
			seen[*id] = true
			order = append(order, *id)
		}
	}
	add(pilot)
	for _, e := range events {
		if _, who, ok := models.EventHat(e); ok {
			add(&who)
		}
	}
	add(t.BuilderID)
	add(t.ApproverID)
	add(t.VerifierID)
	var out []task.HatWearer
	for _, id := range order {
		if a := dir.byID[id]; a != nil && a.IsRunner() {
			continue
		}
		out = append(out, task.HatWearer{Agent: dir.name(&id), Hats: worn[id]})
	}
	return out, nil
}

// hatActor names who acted in a timeline entry with the hat its move put on: "vic as
// tester", or for a move the runner took for someone, "runner (bob as builder)".
func hatActor(e models.Event, actor string, dir *directory) string {
	hat, who, ok := models.EventHat(e)
	if !ok {
		return actor
	}
	if e.ActorID != nil && *e.ActorID == who {
		return actor + " as " + hat
	}
	return actor + " (" + dir.name(&who) + " as " + hat + ")"
}
