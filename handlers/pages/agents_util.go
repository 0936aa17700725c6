package pages

import (
	"context"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// directory is every agent by id, for showing names instead of ids.
type directory struct {
	list []models.Agent
	byID map[int64]*models.Agent
}

// agents loads the agent directory (agents are few; one query per page).
func (p *Pages) agents(ctx context.Context) (*directory, error) {
	list, err := p.svc.Store().ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	d := &directory{list: list, byID: make(map[int64]*models.Agent, len(list))}
	for i := range list {
		d.byID[list[i].ID] = &list[i]
	}
	return d, nil
}

// name returns the name of agent id, "" for nil.
func (d *directory) name(id *int64) string {
	if id == nil {
		return ""
	}
	if *id == 0 {
		return "system" // the operator's command line (models.System)
	}
	if a := d.byID[*id]; a != nil {
		return a.Name
	}
	return "#" + itoa(*id)
}

// options lists the agents work can be given to (enabled, not the runner), after a
// blank choice labelled blank.
func (d *directory) options(blank string) []components.Option {
	return d.roleOptions(blank, "")
}

// roleOptions lists the agents a task of role can be given to (assign, reassign):
// enabled, not the runner, holding role (any role when role is ""), after a blank
// choice labelled blank.
func (d *directory) roleOptions(blank, role string) []components.Option {
	out := []components.Option{{Value: "", Label: blank}}
	for _, a := range d.list {
		if a.Disabled || a.Kind == models.KindSystem || (role != "" && !a.HasRole(role)) {
			continue
		}
		label := a.Name + " (" + string(a.Kind) + ")"
		out = append(out, components.Option{Value: a.Name, Label: label})
	}
	return out
}
