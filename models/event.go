package models

import (
	"encoding/json"
	"time"
)

// Event is a numbered state change, persisted in the same transaction as the change
// and pushed live.
type Event struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type"` // task.assigned, task.verified, goal.verified, attempt.finished, …
	TaskID    *int64          `json:"task_id,omitempty"`
	GoalID    *int64          `json:"goal_id,omitempty"`
	ActorID   *int64          `json:"actor_id,omitempty"`
	AgentID   *int64          `json:"agent_id,omitempty"` // the agent the event is about (agent.*, token.*)
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}
