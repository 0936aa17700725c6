package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/models/contract"
)

// The advisory prompt: an advisory task has no automated verification, so before one
// is delegated a person may be asked to confirm it. The task is held when its
// contract is advisory and any of AdvisoryPromptReasons holds: the project rules'
// prompt_for_advisory is on (every advisory task waits, whoever classified it), or
// generation classified it advisory (the author did not choose the type) and either
// its words are ambiguous (AdvisoryAmbiguous) or it is a step of a multi-step template
// run (advisory steps in a planned sequence may mean unclear requirements).
//
// Held means: an open inbox item of kind advisory_prompt exists for the task. That
// item is the hold itself — there is no column and no extra task state, so the task
// stays pending (or assigned) and everything else about it is unchanged; the runner's
// claim skips tasks with an open advisory_prompt item (store ReadyTasks), and starting
// one by hand (API, MCP update_task, dashboard) is refused with the rule
// advisory_prompt. A lead or an exec resolves the item with one of three actions
// (ResolveAdvisoryPrompt): proceed (as advisory), make_verifiable (the edited criteria
// replace the contract's verification, validated as at creation) or cancel (the task
// is cancelled). Resolving it releases the task.
//
// When no reason holds the task proceeds at once, as before, and the decision is
// logged for review: an advisory.proceeded event (auto true) with the task, and, once
// its output exists, the advisory inbox item the runner already opens.

// InboxAdvisoryPrompt: an advisory task waits, undelegated, for a person to proceed
// as advisory, make it verifiable or cancel it (see ResolveAdvisoryPrompt).
const InboxAdvisoryPrompt = "advisory_prompt"

// RuleAdvisoryPrompt names the rule that keeps a held advisory task from starting, and
// that refuses a resolution of a task that has no prompt waiting.
const RuleAdvisoryPrompt = "advisory_prompt"

// Why an advisory task waits for a person (AdvisoryPromptPayload.Reasons).
const (
	AdvisoryReasonSetting   = "prompt_for_advisory" // the project rule is on
	AdvisoryReasonAmbiguous = "ambiguous"           // advisory and verifiable signals both present
	AdvisoryReasonMultiStep = "multi_step_run"      // a step of a multi-step template run
)

// The three resolutions of an advisory prompt.
const (
	AdvisoryProceed        = "proceed"
	AdvisoryMakeVerifiable = "make_verifiable"
	AdvisoryCancel         = "cancel"
)

// AdvisoryActions lists the resolutions in display order.
var AdvisoryActions = []string{AdvisoryProceed, AdvisoryMakeVerifiable, AdvisoryCancel}

// AdvisoryPromptPayload is the payload of an advisory_prompt inbox item: why the task
// waits, and the criteria generation would give it as a verifiable task (what the
// "make verifiable" form starts from).
type AdvisoryPromptPayload struct {
	Reasons   []string             `json:"reasons"`
	Suggested []contract.Criterion `json:"suggested,omitempty"`
}

// AdvisoryDecision is a person's answer to an advisory prompt: Action is proceed,
// make_verifiable or cancel; Criteria are the verifiable contract's criteria
// (make_verifiable only; none: generated from the task's words, as at creation);
// Reason is an optional note kept with the resolution.
type AdvisoryDecision struct {
	Action   string               `json:"action"`
	Criteria []contract.Criterion `json:"criteria,omitempty"`
	Reason   string               `json:"reason,omitempty"`
}

// AdvisoryPromptReasons says why task t, as built, must wait for a person before it is
// delegated; none when it may proceed. files are the files the creator said it will
// touch (besides those named in its text). It reads the task's run and template for
// the multi-step case.
func AdvisoryPromptReasons(ctx context.Context, tx Tx, rules ProjectRules, t *Task, files []string) ([]string, error) {
	v := t.Contract.Verification
	if v.Type != contract.VerifyAdvisory {
		return nil, nil
	}
	var reasons []string
	if rules.PromptForAdvisory {
		reasons = append(reasons, AdvisoryReasonSetting)
	}
	if v.GeneratedFrom != contract.GeneratedAuto {
		return reasons, nil // the author chose advisory: only the setting asks again
	}
	if contract.AdvisoryAmbiguous(t.Title, t.Brief, files, rules.Rules) {
		reasons = append(reasons, AdvisoryReasonAmbiguous)
	}
	if t.RunID != nil {
		multi := t.StepNum > 1
		if !multi {
			run, err := tx.GetRun(ctx, *t.RunID)
			if err != nil {
				return nil, err
			}
			tpl, err := tx.GetTemplate(ctx, run.TemplateName, run.TemplateVersion)
			if err != nil {
				return nil, err
			}
			multi = len(tpl.Steps) > 1
		}
		if multi {
			reasons = append(reasons, AdvisoryReasonMultiStep)
		}
	}
	return reasons, nil
}

// gateAdvisory runs when a task is stored (insertTask): an advisory task either waits
// for a person (an advisory_prompt inbox item, advisory.held) or proceeds at once with
// its decision logged for review (advisory.proceeded, auto). Other tasks pass.
func (s *TaskService) gateAdvisory(ctx context.Context, tx Tx, actor *Agent, t *Task, files []string) error {
	if t.Contract.Verification.Type != contract.VerifyAdvisory {
		return nil
	}
	rules, err := RulesIn(ctx, tx)
	if err != nil {
		return err
	}
	reasons, err := AdvisoryPromptReasons(ctx, tx, rules, t, files)
	if err != nil {
		return err
	}
	if len(reasons) == 0 {
		return s.emit(ctx, tx, "advisory.proceeded", actor, &t.ID, t.GoalID, map[string]any{
			"auto": true, "note": "advisory task: no automated verification; its output is logged for review"})
	}
	payload, err := json.Marshal(AdvisoryPromptPayload{Reasons: reasons,
		Suggested: contract.SuggestedCriteria(t.Title, t.Brief, files, rules.Rules)})
	if err != nil {
		return err
	}
	item := &InboxItem{Kind: InboxAdvisoryPrompt, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(),
		Title: contract.Truncate(fmt.Sprintf("Advisory task %d waits: %s — proceed as advisory, make verifiable or cancel", t.ID, t.Title), 300)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "advisory.held", actor, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID, "reasons": reasons})
}

// openAdvisoryPrompt returns task t's open advisory_prompt item; nil when it has none.
// Only an advisory task can have one (making it verifiable resolves it), so other
// tasks cost no query.
func openAdvisoryPrompt(ctx context.Context, tx Tx, t *Task) (*InboxItem, error) {
	if t.Contract.Verification.Type != contract.VerifyAdvisory {
		return nil, nil
	}
	items, err := tx.ListInbox(ctx, InboxFilter{TaskID: t.ID, Kind: InboxAdvisoryPrompt, Limit: 1})
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return &items[0], nil
}

// advisoryHold refuses to start a task whose advisory prompt is open (ECONFLICT, rule
// advisory_prompt): it is not delegated until a person proceeds or makes it verifiable.
func advisoryHold(ctx context.Context, tx Tx, t *Task) error {
	it, err := openAdvisoryPrompt(ctx, tx, t)
	if err != nil || it == nil {
		return err
	}
	return &Error{Code: ECONFLICT, Rule: RuleAdvisoryPrompt, State: string(t.State),
		Message: fmt.Sprintf("task %d is advisory and waits in the inbox (item %d) for a lead or exec to proceed as advisory, make it verifiable or cancel it", t.ID, it.ID)}
}

// AdvisoryPromptOf returns the open advisory prompt of task id, nil when none waits.
func (s *InboxService) AdvisoryPromptOf(ctx context.Context, id int64) (*InboxItem, error) {
	t, err := s.store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	return openAdvisoryPrompt(ctx, s.store, t)
}

// normalize trims the decision and lowercases its action, then checks it before any
// transaction starts, so a malformed answer changes nothing: EINVALID with field
// errors for an unknown action, criteria on an action other than make_verifiable, or
// an over-long reason.
func (d *AdvisoryDecision) normalize() error {
	d.Action = strings.ToLower(strings.TrimSpace(d.Action))
	d.Reason = strings.TrimSpace(d.Reason)
	var fe FieldErrors
	if !slices.Contains(AdvisoryActions, d.Action) {
		fe.Add("action", "must be one of "+strings.Join(AdvisoryActions, ", "))
	}
	if d.Action != AdvisoryMakeVerifiable && len(d.Criteria) > 0 {
		fe.Add("criteria", "only make_verifiable takes criteria")
	}
	if utf8.RuneCountInString(d.Reason) > maxInboxNote {
		fe.Add("reason", "must be at most 2000 characters")
	}
	return fe.Err()
}

// ResolveAdvisoryPrompt answers the advisory prompt of task id. Only a lead or an exec
// may (EFORBIDDEN, rule lead_or_exec), as for the other inbox items; a task with no
// open prompt is ECONFLICT (rule advisory_prompt). proceed releases the task as
// advisory (advisory.proceeded); make_verifiable replaces its verification with a
// verifiable one holding d.Criteria — validated as at task creation (EINVALID with
// field errors, nothing changed), shell commands only from an admin, editor or lead
// (commands_need_editor) — and releases it (advisory.made_verifiable); cancel cancels
// the task (its cancel action, which resolves the item). The item records who
// resolved it and how; everything happens in one transaction. It returns the task.
func (s *TaskService) ResolveAdvisoryPrompt(ctx context.Context, actor *Agent, id int64, d AdvisoryDecision) (*Task, error) {
	if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
		return nil, err
	}
	if err := d.normalize(); err != nil {
		return nil, err
	}
	var ct contract.Contract
	if d.Action == AdvisoryMakeVerifiable {
		ct.Verification = contract.Verification{Type: contract.VerifyVerifiable, Criteria: d.Criteria, GeneratedFrom: contract.GeneratedUser}
		if err := requireCommandAuthority(actor, ct, ""); err != nil {
			return nil, err
		}
	}
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, id)
		if err != nil {
			return err
		}
		it, err := openAdvisoryPrompt(ctx, tx, t)
		if err != nil {
			return err
		}
		if it == nil {
			return &Error{Code: ECONFLICT, Rule: RuleAdvisoryPrompt, State: string(t.State),
				Message: fmt.Sprintf("task %d has no advisory prompt waiting", t.ID)}
		}
		out = t
		switch d.Action {
		case AdvisoryCancel:
			reason := d.Reason
			if reason == "" {
				reason = "cancelled at the advisory prompt"
			}
			return s.Apply(ctx, tx, actor, t, ActCancel, ActionInput{Reason: reason})
		case AdvisoryMakeVerifiable:
			if err := s.makeVerifiable(ctx, tx, t, ct.Verification); err != nil {
				return err
			}
		}
		resolution := map[string]string{AdvisoryProceed: "proceeded as advisory", AdvisoryMakeVerifiable: "made verifiable"}[d.Action]
		if d.Reason != "" {
			resolution += ": " + d.Reason
		}
		now := s.now()
		it.Resolved, it.Resolution, it.ResolvedAt = true, resolution, &now
		if actor.ID != 0 {
			it.ResolvedBy = &actor.ID
		}
		if err := tx.UpdateInboxItem(ctx, it); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "inbox.resolved", actor, &t.ID, t.GoalID,
			map[string]any{"inbox_id": it.ID, "kind": it.Kind, "resolution": resolution}); err != nil {
			return err
		}
		data := map[string]any{"inbox_id": it.ID, "by": actorName(actor)}
		if d.Reason != "" {
			data["reason"] = d.Reason
		}
		typ := "advisory.proceeded"
		if d.Action == AdvisoryMakeVerifiable {
			typ, data["criteria"] = "advisory.made_verifiable", len(t.Contract.Verification.Criteria)
		}
		return s.emit(ctx, tx, typ, actor, &t.ID, t.GoalID, data)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// makeVerifiable gives t the verifiable verification v, resolved and validated as a
// new task's contract is (ResolveContract, Normalize, Validate); on a validation error
// t is left as it was.
func (s *TaskService) makeVerifiable(ctx context.Context, tx Tx, t *Task, v contract.Verification) error {
	rules, err := RulesIn(ctx, tx)
	if err != nil {
		return err
	}
	old := t.Contract.Verification
	v.Protect, v.TestsMayChange, v.HeldOut = old.Protect, old.TestsMayChange, old.HeldOut
	v.DependenciesMayChange = old.DependenciesMayChange
	c := t.Contract
	c.Verification = v
	c = contract.ResolveContract(c, t.Title, t.Brief, nil, rules.Rules, s.now())
	c.Normalize()
	check := *t
	check.Contract = c
	if err := check.Validate(); err != nil {
		return err
	}
	t.Contract, t.UpdatedAt = c, s.now()
	return tx.UpdateTask(ctx, t)
}

// resolveInboxKeepingPrompt is resolveInbox for every open item of the task but its
// advisory prompt: reassigning a held task settles its blocked item, not the decision
// whether it may be delegated at all.
func (s *InboxService) resolveInboxKeepingPrompt(ctx context.Context, tx Tx, actor *Agent, taskID int64, resolution string) error {
	items, err := tx.ListInbox(ctx, InboxFilter{TaskID: taskID})
	if err != nil {
		return err
	}
	kinds := map[string]bool{}
	for _, it := range items {
		if it.Kind != InboxAdvisoryPrompt && !kinds[it.Kind] {
			kinds[it.Kind] = true
			if err := s.resolveInbox(ctx, tx, actor, taskID, it.Kind, resolution); err != nil {
				return err
			}
		}
	}
	return nil
}
