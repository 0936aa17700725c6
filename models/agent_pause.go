package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/models/contract"
)

// AgentPausedPayload is the payload of an agent_paused inbox item.
type AgentPausedPayload struct {
	AgentID  int64  `json:"agent_id"`
	Agent    string `json:"agent"`
	TaskID   int64  `json:"task_id"`
	Attempt  int    `json:"attempt"`
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason"`
}

// PauseAgent disables a worker agent whose own command could not run (exit 126: not
// executable, 127: not found), inside the runner's transaction: that is the agent's
// infrastructure failing, not the work, so no attempt is charged; instead the agent
// takes no more work until an admin enables it again (the agent's disabled flag, a
// reversible and visible state), and an agent_paused inbox item on the task that
// showed it says why. The change is an agent.changed event by the runner, as any
// change of an agent is. An agent already disabled is left as it is, with no second
// item.
func (s *AgentService) PauseAgent(ctx context.Context, tx Tx, runner *Agent, agentID int64, t *Task, p AgentPausedPayload) error {
	a, err := tx.GetAgent(ctx, agentID)
	if err != nil {
		return err
	}
	if a.Disabled {
		return nil
	}
	before := *a
	a.Disabled, a.UpdatedAt = true, s.now()
	if err := tx.UpdateAgent(ctx, a); err != nil {
		return err
	}
	if err := s.emitAbout(ctx, tx, AgentChangedEvent, runner, a.ID, map[string]any{
		"agent": a.Name, "by": actorName(runner), "reason": p.Reason, "changes": AgentChanges(&before, a)}); err != nil {
		return err
	}
	p.AgentID, p.Agent, p.TaskID = a.ID, a.Name, t.ID
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	item := &InboxItem{Kind: InboxAgentPaused, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(),
		Title: contract.Truncate(fmt.Sprintf("Agent %s paused: its command could not run (exit %d); task %d waits for it, no attempt used",
			a.Name, p.ExitCode, t.ID), 300)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", runner, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID, "kind": item.Kind, "agent": a.Name})
}

// resolveAgentPaused closes the open agent_paused items of agent a, which an admin
// has just enabled again.
func (s *AgentService) resolveAgentPaused(ctx context.Context, tx Tx, actor *Agent, a *Agent) error {
	items, err := tx.ListInbox(ctx, InboxFilter{Kind: InboxAgentPaused})
	if err != nil {
		return err
	}
	now := s.now()
	for i := range items {
		it := &items[i]
		var p AgentPausedPayload
		if json.Unmarshal(it.Payload, &p) != nil || p.AgentID != a.ID {
			continue
		}
		resolution := "agent " + a.Name + " enabled again by " + actorName(actor)
		it.Resolved, it.Resolution, it.ResolvedAt = true, resolution, &now
		if actor != nil && actor.ID != 0 {
			it.ResolvedBy = &actor.ID
		}
		if err := tx.UpdateInboxItem(ctx, it); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "inbox.resolved", actor, &it.TaskID, it.GoalID,
			map[string]any{"inbox_id": it.ID, "kind": it.Kind, "resolution": resolution}); err != nil {
			return err
		}
	}
	return nil
}
