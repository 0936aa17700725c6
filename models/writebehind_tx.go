// Every Tx method WriteBehind does not hold or serve itself flushes what it holds, then
// calls the Tx underneath. The methods were written out from the Tx interface in one
// pass; embedding the Tx instead would let a method added to Tx later bypass the
// flush silently, while here it fails to compile (WriteBehind must be a Tx) until it
// is added in the same shape.

package models

import (
	"context"
	"time"
)

// CreateAgent flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateAgent(ctx context.Context, a *Agent) error {
	w.forgetAgents()
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateAgent(ctx, a)
}

// UpdateAgent flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) UpdateAgent(ctx context.Context, a *Agent) error {
	w.forgetAgents()
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.UpdateAgent(ctx, a)
}

// ListAgents flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListAgents(ctx context.Context) ([]Agent, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListAgents(ctx)
}

// TokenByHash flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) TokenByHash(ctx context.Context, hash string) (*Token, *Agent, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, nil, err
	}
	return w.tx.TokenByHash(ctx, hash)
}

// GetToken flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetToken(ctx context.Context, id int64) (*Token, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetToken(ctx, id)
}

// ListTokens flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListTokens(ctx context.Context, agentID int64) ([]Token, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListTokens(ctx, agentID)
}

// TouchToken flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) TouchToken(ctx context.Context, id int64, at time.Time, since time.Time) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.TouchToken(ctx, id, at, since)
}

// RevokeAttemptToken flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) RevokeAttemptToken(ctx context.Context, id int64, at time.Time) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.RevokeAttemptToken(ctx, id, at)
}

// RevokeAttemptTokens flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) RevokeAttemptTokens(ctx context.Context, ids []int64, at time.Time) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.RevokeAttemptTokens(ctx, ids, at)
}

// RevokeTaskAttemptTokens flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) RevokeTaskAttemptTokens(ctx context.Context, taskID int64, at time.Time) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.RevokeTaskAttemptTokens(ctx, taskID, at)
}

// RevokeTokens flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) RevokeTokens(ctx context.Context, f TokenFilter, at time.Time) ([]Token, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.RevokeTokens(ctx, f, at)
}

// DeleteAttemptTokens flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) DeleteAttemptTokens(ctx context.Context, before time.Time) (int64, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.tx.DeleteAttemptTokens(ctx, before)
}

// GetLoginFailures flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetLoginFailures(ctx context.Context, name string) (*LoginFailures, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetLoginFailures(ctx, name)
}

// AddLoginFailure flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) AddLoginFailure(ctx context.Context, name string, at time.Time, since time.Time) (int, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.tx.AddLoginFailure(ctx, name, at, since)
}

// LockLogin flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) LockLogin(ctx context.Context, name string, until time.Time) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.LockLogin(ctx, name, until)
}

// ClearLoginFailures flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ClearLoginFailures(ctx context.Context, name string) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.ClearLoginFailures(ctx, name)
}

// CreateSession flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateSession(ctx context.Context, s *Session) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateSession(ctx, s)
}

// GetSession flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetSession(ctx context.Context, id string) (*Session, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetSession(ctx, id)
}

// DeleteSession flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) DeleteSession(ctx context.Context, id string) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.DeleteSession(ctx, id)
}

// CreateGoal flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateGoal(ctx context.Context, g *Goal) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateGoal(ctx, g)
}

// UpdateGoal flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) UpdateGoal(ctx context.Context, g *Goal) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.UpdateGoal(ctx, g)
}

// GetGoal flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetGoal(ctx context.Context, id int64) (*Goal, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetGoal(ctx, id)
}

// LockGoal flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) LockGoal(ctx context.Context, id int64) (*Goal, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.LockGoal(ctx, id)
}

// ListGoals flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListGoals(ctx context.Context, f GoalFilter) ([]Goal, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListGoals(ctx, f)
}

// CountGoals flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CountGoals(ctx context.Context) (map[GoalState]int, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.CountGoals(ctx)
}

// SearchGoals flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) SearchGoals(ctx context.Context, text string, limit int) ([]Goal, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.SearchGoals(ctx, text, limit)
}

// CreateTask flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateTask(ctx context.Context, t *Task) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateTask(ctx, t)
}

// AddDependency flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) AddDependency(ctx context.Context, taskID int64, dependsOn int64) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.AddDependency(ctx, taskID, dependsOn)
}

// RemoveDependency flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) RemoveDependency(ctx context.Context, taskID int64, dependsOn int64) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.RemoveDependency(ctx, taskID, dependsOn)
}

// GetTask flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetTask(ctx context.Context, id int64) (*Task, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetTask(ctx, id)
}

// ListTasks flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListTasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListTasks(ctx, f)
}

// ListTaskHeads flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListTaskHeads(ctx context.Context, f TaskFilter) ([]Task, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListTaskHeads(ctx, f)
}

// CountTasks flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CountTasks(ctx context.Context, goalID int64) (map[TaskState]int, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.CountTasks(ctx, goalID)
}

// CountTasksByGoal flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CountTasksByGoal(ctx context.Context, goalIDs []int64) (map[int64]map[TaskState]int, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.CountTasksByGoal(ctx, goalIDs)
}

// SearchTasks flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) SearchTasks(ctx context.Context, text string, limit int) ([]Task, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.SearchTasks(ctx, text, limit)
}

// CreateTemplate flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateTemplate(ctx context.Context, t *Template) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateTemplate(ctx, t)
}

// GetTemplate flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetTemplate(ctx context.Context, name string, version int) (*Template, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetTemplate(ctx, name, version)
}

// ListTemplates flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListTemplates(ctx context.Context) ([]Template, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListTemplates(ctx)
}

// ListTemplateVersions flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListTemplateVersions(ctx context.Context, name string) ([]Template, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListTemplateVersions(ctx, name)
}

// CreateRun flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateRun(ctx context.Context, r *Run) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateRun(ctx, r)
}

// GetRun flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetRun(ctx context.Context, id int64) (*Run, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetRun(ctx, id)
}

// SpendOf flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) SpendOf(ctx context.Context, scope SpendScope) (Spend, error) {
	if err := w.Flush(ctx); err != nil {
		return Spend{}, err
	}
	return w.tx.SpendOf(ctx, scope)
}

// CreateInboxItem flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CreateInboxItem(ctx context.Context, i *InboxItem) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.CreateInboxItem(ctx, i)
}

// UpdateInboxItem flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) UpdateInboxItem(ctx context.Context, i *InboxItem) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.UpdateInboxItem(ctx, i)
}

// GetInboxItem flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetInboxItem(ctx context.Context, id int64) (*InboxItem, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetInboxItem(ctx, id)
}

// ListInbox flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListInbox(ctx context.Context, f InboxFilter) ([]InboxItem, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListInbox(ctx, f)
}

// EscalateInboxItem flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) EscalateInboxItem(ctx context.Context, id int64, at time.Time) (bool, error) {
	if err := w.Flush(ctx); err != nil {
		return false, err
	}
	return w.tx.EscalateInboxItem(ctx, id, at)
}

// CountInbox flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CountInbox(ctx context.Context, f InboxFilter) (int, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.tx.CountInbox(ctx, f)
}

// ListEvents flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListEvents(ctx context.Context, afterID int64, limit int) ([]Event, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListEvents(ctx, afterID, limit)
}

// LastEventID flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) LastEventID(ctx context.Context) (int64, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.tx.LastEventID(ctx)
}

// ListEventsOfType flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListEventsOfType(ctx context.Context, typ string, beforeID int64, limit int) ([]Event, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListEventsOfType(ctx, typ, beforeID, limit)
}

// ListAgentEvents flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListAgentEvents(ctx context.Context, agentID int64, limit int) ([]Event, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListAgentEvents(ctx, agentID, limit)
}

// UpdateLedgerEntry flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) UpdateLedgerEntry(ctx context.Context, e *LedgerEntry) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.UpdateLedgerEntry(ctx, e)
}

// GetLedgerEntry flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) GetLedgerEntry(ctx context.Context, id int64) (*LedgerEntry, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.GetLedgerEntry(ctx, id)
}

// ListLedger flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) ListLedger(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.ListLedger(ctx, f)
}

// CountLedger flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) CountLedger(ctx context.Context, status string) (int, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.tx.CountLedger(ctx, status)
}

// LockRules flushes the held writes first, then calls the Tx underneath.
func (w *WriteBehind) LockRules(ctx context.Context) (*ProjectRules, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.LockRules(ctx)
}
