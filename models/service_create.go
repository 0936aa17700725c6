package models

import (
	"context"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// DefaultTaskRole is the role of a task created without one (the seeds' create_task
// has no role argument).
const DefaultTaskRole = "developer"

// TaskSpec is what a caller gives to create a task: the task's own fields, the
// assignee's name, and the files the task is expected to touch (for contract
// generation).
type TaskSpec struct {
	Title     string            `json:"title" yaml:"title"`
	Brief     string            `json:"brief" yaml:"brief"`
	Role      string            `json:"role" yaml:"role"`
	GoalID    *int64            `json:"goal_id,omitempty" yaml:"goal_id,omitempty"`
	Priority  int               `json:"priority" yaml:"priority"`
	Approve   Policy            `json:"approve" yaml:"approve"`
	Verify    Policy            `json:"verify" yaml:"verify"`
	Contract  contract.Contract `json:"contract" yaml:"contract"`
	DependsOn []int64           `json:"depends_on" yaml:"depends_on"`
	Assignee  string            `json:"assignee" yaml:"assignee"`
	Files     []string          `json:"files" yaml:"files"`
	// SpawnedBy names the pilot's task when this is a minion task (see Task.SpawnedBy).
	SpawnedBy *int64 `json:"spawned_by,omitempty" yaml:"spawned_by,omitempty"`
}

// build turns the spec into a validated task with its contract resolved (an explicit
// contract wins; otherwise it is generated from the project rules).
func (sp *TaskSpec) build(rules ProjectRules, now time.Time) (*Task, error) {
	t := &Task{
		Title: sp.Title, Brief: sp.Brief, Role: sp.Role, GoalID: sp.GoalID, Priority: sp.Priority,
		Approve: strings.TrimSpace(sp.Approve), Verify: strings.TrimSpace(sp.Verify), DependsOn: sp.DependsOn,
		State: TaskPending, CreatedAt: now, UpdatedAt: now, SpawnedBy: sp.SpawnedBy,
	}
	if strings.TrimSpace(t.Role) == "" {
		t.Role = DefaultTaskRole
	}
	t.Contract = contract.ResolveContract(sp.Contract, sp.Title, sp.Brief, sp.Files, rules.Rules, now)
	t.Contract.Normalize()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// Rules returns the saved project rules, or the defaults when none were saved.
func (s *TemplateService) Rules(ctx context.Context) (ProjectRules, error) {
	r, err := s.store.GetRules(ctx)
	if ErrorCode(err) == ENOTFOUND {
		return DefaultRules(), nil
	}
	if err != nil {
		return ProjectRules{}, err
	}
	return *r, nil
}

// CreateTask creates a task from spec: the contract is fixed now, before delegation.
// With an assignee the task starts assigned; a lead or exec may assign anyone, anyone
// may assign themself.
//
// Shell in the caller's contract (verify commands, criteria commands) needs an admin,
// editor or lead (commands_need_editor); anyone may name criteria by activity.
func (s *TaskService) CreateTask(ctx context.Context, actor *Agent, spec TaskSpec) (*Task, error) {
	if err := requireCommandAuthority(actor, spec.Contract, ""); err != nil {
		return nil, err
	}
	rules, err := s.templates.Rules(ctx)
	if err != nil {
		return nil, err
	}
	t, err := spec.build(rules, s.now())
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		return s.insertTaskFiles(ctx, tx, actor, t, spec.Assignee, spec.Files)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// insertTask stores a built task in tx: checks its goal and dependencies, assigns it,
// writes its events, holds it for the advisory prompt or logs its auto-proceed (see
// gateAdvisory) and moves its goal along.
func (s *TaskService) insertTask(ctx context.Context, tx Tx, actor *Agent, t *Task, assignee string) error {
	return s.insertTaskFiles(ctx, tx, actor, t, assignee, nil)
}

// insertTaskFiles is insertTask with the files the creator expects the task to touch,
// which count as verifiable signals for the advisory prompt's ambiguity.
func (s *TaskService) insertTaskFiles(ctx context.Context, tx Tx, actor *Agent, t *Task, assignee string, files []string) error {
	if t.GoalID != nil {
		g, err := tx.LockGoal(ctx, *t.GoalID) // before any event: see Apply
		if ErrorCode(err) == ENOTFOUND {
			return &Error{Code: EINVALID, Message: "unknown goal", Fields: map[string]string{"goal_id": "no such goal"}}
		}
		if err != nil {
			return err
		}
		if g.State == GoalVerified {
			return &Error{Code: ECONFLICT, Message: "goal is verified; reopen a task or create a new goal", State: string(g.State)}
		}
	}
	if len(t.DependsOn) > 0 {
		deps, err := tx.GetTasks(ctx, t.DependsOn)
		if err != nil {
			return err
		}
		if len(deps) != len(uniqueIDs(t.DependsOn)) {
			return &Error{Code: EINVALID, Message: "unknown dependency", Fields: map[string]string{"depends_on": "names a task that does not exist"}}
		}
	}
	if err := actor.scopeCreate(ctx, tx, t); err != nil {
		return err
	}
	t.CreatorID = actor.ID
	var target *Agent
	if strings.TrimSpace(assignee) != "" {
		a, err := targetAgent(ctx, tx, t, assignee)
		if err != nil {
			return err
		}
		if a.ID != actor.ID && !actor.IsRunner() {
			if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
				return err
			}
		}
		target = a
		t.AssigneeID, t.State = &a.ID, TaskAssigned
	}
	if err := tx.CreateTask(ctx, t); err != nil {
		return err
	}
	data := map[string]any{"title": t.Title, "role": t.Role, "contract_type": t.Contract.Verification.Type, "generated_from": t.Contract.Verification.GeneratedFrom}
	if err := s.emit(ctx, tx, "task.created", actor, &t.ID, t.GoalID, data); err != nil {
		return err
	}
	if target != nil {
		if err := s.emit(ctx, tx, "task.assigned", actor, &t.ID, t.GoalID, map[string]any{"from": TaskPending, "to": TaskAssigned, "agent": target.Name}); err != nil {
			return err
		}
	}
	if err := s.gateAdvisory(ctx, tx, actor, t, files); err != nil {
		return err
	}
	if t.GoalID != nil {
		return s.goals.syncGoal(ctx, tx, actor, *t.GoalID, "")
	}
	return nil
}

func uniqueIDs(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
