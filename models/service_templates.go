package models

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models/contract"
)

// Template editors: the roles that may save templates and project rules.
var editorRoles = []string{RoleLead, RoleAdmin, "editor"}

// CanEditTemplates reports whether a holds a role that may save templates and
// project rules.
func CanEditTemplates(a *Agent) bool { return requireAny(a, "editor_only", editorRoles...) == nil }

// SaveTemplate validates t and saves it as the next version of its name, with a
// template.changed event naming who saved it and the diff from the version before.
// Only an admin, editor or lead may save a template (editor_only), and steps carrying
// shell commands need one of those roles whoever else may edit templates
// (commands_need_editor).
func (s *TemplateService) SaveTemplate(ctx context.Context, actor *Agent, t *Template) error {
	for i, st := range t.Steps {
		if err := requireCommandAuthority(actor, st.Contract(), fmt.Sprintf("steps[%d]", i)); err != nil {
			return err
		}
	}
	if err := requireAny(actor, "editor_only", editorRoles...); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	t.CreatorID, t.CreatedAt = actor.ID, s.now()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.CreateTemplate(ctx, t); err != nil {
			return err
		}
		prev, err := s.previousVersion(ctx, tx, t)
		if err != nil {
			return err
		}
		change, err := templateChange(actor, prev, t)
		if err != nil {
			return err
		}
		return s.emit(ctx, tx, EventTemplateChanged, actor, nil, nil, change)
	})
}

// previousVersion returns the version of t's template before t (saved in tx), nil for
// a new template. CreateTemplate numbered t after the newest committed version, so
// that one is visible.
func (s *TemplateService) previousVersion(ctx context.Context, tx Tx, t *Template) (*Template, error) {
	if t.Version <= 1 {
		return nil, nil
	}
	return tx.GetTemplate(ctx, t.Name, t.Version-1)
}

// SaveRules validates and saves the project rules for contract generation, with a
// rules.changed event naming who saved them and the diff from the rules they replace
// (the defaults when none were saved). The rules map activities to shell commands:
// only an admin, editor or lead may save them (commands_need_editor; editor_only for
// rules without a command).
func (s *TemplateService) SaveRules(ctx context.Context, actor *Agent, r *ProjectRules) error {
	if err := requireRulesAuthority(actor, r); err != nil {
		return err
	}
	if err := requireAny(actor, "editor_only", editorRoles...); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	r.UpdatedAt = s.now()
	return s.store.InTx(ctx, func(tx Tx) error {
		before, err := tx.LockRules(ctx)
		if ErrorCode(err) == ENOTFOUND {
			def := DefaultRules()
			before, err = &def, nil
		}
		if err != nil {
			return err
		}
		if err := tx.SaveRules(ctx, r); err != nil {
			return err
		}
		change, err := rulesChange(actor, before, r)
		if err != nil {
			return err
		}
		return s.emit(ctx, tx, EventRulesChanged, actor, nil, nil, change)
	})
}

// StartRun instantiates a template version (0: the latest) for a goal: one task per
// step, each depending on the one before, so that step N+1 is released only when step
// N is verified. The steps of a parallel group (see Stages) each depend on the step
// before the group, so they are released together and run at the same time, and the
// step after the group depends on all of them. Params replace {{name}} in the steps'
// briefs.
func (s *TemplateService) StartRun(ctx context.Context, actor *Agent, goalID int64, name string, version int, params map[string]string) (*Run, []Task, error) {
	if err := requireAny(actor, "lead_only", RoleLead); err != nil {
		return nil, nil, err
	}
	tpl, err := s.store.GetTemplate(ctx, name, version)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil, &Error{Code: EINVALID, Message: "unknown template", Fields: map[string]string{"template": fmt.Sprintf("no template %q (version %d)", name, version)}}
	}
	if err != nil {
		return nil, nil, err
	}
	rules, err := s.Rules(ctx)
	if err != nil {
		return nil, nil, err
	}
	run := &Run{GoalID: goalID, TemplateName: tpl.Name, TemplateVersion: tpl.Version, Params: params, CreatorID: actor.ID, CreatedAt: s.now()}
	var tasks []Task
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.CreateRun(ctx, run); err != nil {
			return err
		}
		var prev []int64 // the tasks of the stage before
		for _, stage := range Stages(tpl.Steps) {
			var cur []int64
			for _, i := range stage {
				spec := stepSpec(tpl.Steps[i], i, goalID, params)
				spec.DependsOn = prev
				t, err := spec.build(rules, s.now())
				if err != nil {
					return err
				}
				t.RunID, t.StepNum = &run.ID, i+1
				if err := s.tasks.insertTask(ctx, tx, actor, t, ""); err != nil {
					return err
				}
				cur = append(cur, t.ID)
				tasks = append(tasks, *t)
			}
			prev = cur
		}
		return s.emit(ctx, tx, "run.started", actor, nil, &goalID, map[string]any{"run_id": run.ID, "template": tpl.Name, "version": tpl.Version, "tasks": len(tasks)})
	})
	if err != nil {
		return nil, nil, err
	}
	return run, tasks, nil
}

// stepSpec turns a template step into a task spec for a goal.
func stepSpec(st Step, i int, goalID int64, params map[string]string) TaskSpec {
	title := st.Name
	if title == "" {
		title = fmt.Sprintf("Step %d: %s", i+1, st.Role)
	}
	brief := st.Brief
	for k, v := range params {
		brief = strings.ReplaceAll(brief, "{{"+k+"}}", v)
		title = strings.ReplaceAll(title, "{{"+k+"}}", v)
	}
	c := st.Contract()
	if t := c.Verification.Type; t != "" && t != contract.VerifyAuto && c.Verification.GeneratedFrom == "" {
		c.Verification.GeneratedFrom = contract.GeneratedTemplate
	}
	return TaskSpec{Title: title, Brief: brief, Role: st.Role, GoalID: &goalID, Approve: st.Approve, Verify: st.Verify, Contract: c}
}
