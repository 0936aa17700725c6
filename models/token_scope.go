package models

import (
	"context"
	"slices"
)

// RuleAttemptTokenScope is the rule a request authenticated by an attempt token breaks
// when it reaches beyond its task.
const RuleAttemptTokenScope = "attempt_token_scope"

// TokenScope confines a request authenticated by an attempt token. The runner issues
// such a token (IssueAttemptToken) to a worker for one attempt of one task; with it
// the worker acts as its agent, but only:
//
//   - on its own task (TaskID): read it, and nothing more — the runner submits it
//     once the worker exits, and a worker posts no protocol messages (a submit of its
//     own would race the runner's);
//   - on the tasks it created with a token of that task (their ParentTaskID is TaskID):
//     read them, and take the actions of ScopedChildActions (cancel them);
//   - and it may create tasks, which become children of TaskID.
//
// Everything else — another task, goals, templates, rules, the inbox, agents, tokens,
// any lead, exec, editor or admin action — is EFORBIDDEN with rule
// RuleAttemptTokenScope, whatever the agent's roles. A scope is set by Authenticate and
// never stored.
type TokenScope struct {
	TokenID int64 `json:"token_id"`
	TaskID  int64 `json:"task_id"`
	Attempt int   `json:"attempt"`
}

// ScopedOwnActions are the actions an attempt token may take on its own task: none,
// because the runner moves the task the worker is running.
var ScopedOwnActions = []Action{}

// ScopedChildActions are the actions an attempt token may take on a task it created.
var ScopedChildActions = []Action{ActCancel}

// scopeError is the refusal of something an attempt token may not do.
func scopeError(what string) error {
	return Forbidden(RuleAttemptTokenScope, "an attempt token may not %s: it acts only on its own task and on the tasks it created", what)
}

// Unscoped returns nil unless a acts through an attempt token, and then an
// EFORBIDDEN attempt_token_scope error saying that what (e.g. "list goals") is out
// of its scope. Every entry that is not a task's own operation calls it.
func (a *Agent) Unscoped(what string) error {
	if a == nil || a.Scope == nil {
		return nil
	}
	return scopeError(what)
}

// inScope reports whether t is the scope's task or one it spawned.
func (sc *TokenScope) inScope(t *Task) (own, child bool) {
	own = t.ID == sc.TaskID
	child = t.ParentTaskID != nil && *t.ParentTaskID == sc.TaskID
	return own, child
}

// MayReadTask returns nil when a may read task t: always, unless a acts through an
// attempt token, which reads only its own task and the tasks it created.
func (a *Agent) MayReadTask(t *Task) error {
	if a == nil || a.Scope == nil {
		return nil
	}
	if own, child := a.Scope.inScope(t); own || child {
		return nil
	}
	return scopeError("read another task")
}

// scopeAllowsAction returns nil when a may take act on t as far as its token's scope
// goes (the lifecycle and role rules still apply).
func (a *Agent) scopeAllowsAction(t *Task, act Action) error {
	if a == nil || a.Scope == nil {
		return nil
	}
	own, child := a.Scope.inScope(t)
	switch {
	case own && slices.Contains(ScopedOwnActions, act), child && slices.Contains(ScopedChildActions, act):
		return nil
	case own || child:
		return scopeError(string(act) + " this task")
	}
	return scopeError("act on another task")
}

// scopeCreate applies an attempt token's scope to a task it creates, in tx: the task
// becomes a child of the scope's task — its ParentTaskID (what the token may read and
// cancel) and its SpawnedBy (whose pilot may not verify it) — and may only join that
// task's goal. Without a scope it checks an explicit SpawnedBy (spawnCreate).
func (a *Agent) scopeCreate(ctx context.Context, tx Tx, t *Task) error {
	if err := spawnCreate(ctx, tx, a, t); err != nil {
		return err
	}
	if a == nil || a.Scope == nil {
		return nil
	}
	parent, err := tx.GetTask(ctx, a.Scope.TaskID)
	if err != nil {
		return err
	}
	if t.GoalID != nil && (parent.GoalID == nil || *parent.GoalID != *t.GoalID) {
		return scopeError("put a task in another goal than its own task's")
	}
	// A worker hands work only to its own kind: a task for another role would run
	// under another agent, whose sandbox may grant more (a port, unix sockets), with a
	// brief the worker wrote.
	if !a.HasRole(t.Role) {
		return scopeError("create a task for role " + quote(t.Role) + ", which its agent does not hold")
	}
	t.ParentTaskID = &parent.ID
	return nil
}
