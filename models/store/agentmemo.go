package store

import (
	"slices"

	"github.com/countersign/countersign/models"
)

// agentMemo holds the agents a transaction has read or written, by id. The governance
// service asks for the same agent (a task's builder, its assignee) several times in one
// transaction; on PostgreSQL each ask is a round trip. Within a transaction the memo
// gives repeatable reads of agent rows, which is what the service's rules assume.
// Every write of an agent goes through this package and updates the memo.
type agentMemo map[int64]*models.Agent

// memoAgent remembers a copy of a for the rest of the transaction; outside a
// transaction it does nothing.
func (o *ops) memoAgent(a *models.Agent) {
	if o.tx == nil {
		return
	}
	if o.tx.agents == nil {
		o.tx.agents = agentMemo{}
	}
	o.tx.agents[a.ID] = cloneAgent(a)
}

// forgetAgent drops the agent with this id from the memo.
func (o *ops) forgetAgent(id int64) {
	if o.tx != nil {
		delete(o.tx.agents, id)
	}
}

// memoByID returns a copy of the remembered agent with this id, or nil.
func (o *ops) memoByID(id int64) *models.Agent {
	if o.tx == nil {
		return nil
	}
	if a, ok := o.tx.agents[id]; ok {
		return cloneAgent(a)
	}
	return nil
}

// memoByName returns a copy of the remembered agent with this name, or nil.
func (o *ops) memoByName(name string) *models.Agent {
	if o.tx == nil {
		return nil
	}
	for _, a := range o.tx.agents {
		if a.Name == name {
			return cloneAgent(a)
		}
	}
	return nil
}

// cloneAgent copies a so that callers can change what they get without changing the
// memo.
func cloneAgent(a *models.Agent) *models.Agent {
	c := *a
	c.Roles = slices.Clone(a.Roles)
	c.Sandbox = a.Sandbox.Clone()
	c.Scope = nil
	return &c
}
