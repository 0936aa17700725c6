package models_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
)

func TestAdvisoryAmbiguous(t *testing.T) {
	rules := models.DefaultRules()
	for _, c := range []struct {
		title, brief string
		files        []string
		want         bool
	}{
		{"Investigate why checkout is slow", "", nil, false},
		{"Investigate why checkout is slow", "", []string{"api/checkout.go"}, true},
		{"Investigate the timeout in api/checkout.go", "", nil, true},
		{"Investigate the timeout and fix it", "", nil, true},
		{"Write a plan for the login rework", "", nil, true},
		{"Research onboarding flows", "compare three competitors", nil, false},
		{"Research onboarding flows", "", []string{"docs/onboarding.md"}, false},
		{"Add a dark mode toggle", "", []string{"src/Toggle.tsx"}, false},
	} {
		if got := contract.AdvisoryAmbiguous(c.title, c.brief, c.files, rules.Rules); got != c.want {
			t.Errorf("AdvisoryAmbiguous(%q, %q, %v) = %v, want %v", c.title, c.brief, c.files, got, c.want)
		}
	}
}

// prompts returns the open advisory prompts.
func (e *inboxEnv) prompts() []models.InboxItem {
	e.t.Helper()
	items, err := e.db.ListInbox(e.ctx, models.InboxFilter{Kind: models.InboxAdvisoryPrompt})
	if err != nil {
		e.t.Fatal(err)
	}
	return items
}

func (e *inboxEnv) create(title string, files ...string) *models.Task {
	e.t.Helper()
	task, err := e.svc.Tasks.CreateTask(e.ctx, e.agents["lead"], models.TaskSpec{Title: title, Role: "developer", Files: files})
	if err != nil {
		e.t.Fatal(err)
	}
	return task
}

func (e *inboxEnv) ready() []int64 {
	e.t.Helper()
	var ids []int64
	err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		ts, err := tx.(models.Claimer).ReadyTasks(e.ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{e.agents["bot"].ID}})
		for _, t := range ts {
			ids = append(ids, t.ID)
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

func advWantRule(t *testing.T, err error, code, rule string) {
	t.Helper()
	var me *models.Error
	if models.ErrorCode(err) != code || !asErr(err, &me) || me.Rule != rule {
		t.Fatalf("want %s rule %s, got %v (%+v)", code, rule, err, me)
	}
}

func asErr(err error, out **models.Error) bool {
	e, ok := err.(*models.Error)
	*out = e
	return ok
}

// checkUnambiguousAdvisoryProceeds checks that with the setting off (the default) an
// unambiguous advisory task is not held: it is claimable at once and its proceeding
// is logged for review.
func checkUnambiguousAdvisoryProceeds(t *testing.T, e *inboxEnv) {
	t.Helper()
	// Off (the default): an unambiguous advisory task proceeds, logged.
	plain := e.create("Investigate why checkout is slow")
	if plain.Contract.Verification.Type != contract.VerifyAdvisory || len(e.prompts()) != 0 {
		t.Fatalf("plain advisory: %s, %d prompts", plain.Contract.Verification.Type, len(e.prompts()))
	}
	evs, err := e.db.ListEventsOfType(e.ctx, "advisory.proceeded", 1<<62, 10)
	if err != nil || len(evs) != 1 || *evs[0].TaskID != plain.ID {
		t.Fatalf("auto-proceed not logged: %v %+v", err, evs)
	}
	if !slices.Contains(e.ready(), plain.ID) {
		t.Fatal("an unprompted advisory task is not claimable")
	}
}

// checkPromptSettingHoldsEvery checks that with prompt_for_advisory on every advisory
// task waits; proceed releases it, cancel cancels it, an unknown action is EINVALID.
func checkPromptSettingHoldsEvery(t *testing.T, e *inboxEnv) {
	t.Helper()
	// The setting on: every advisory task waits; proceed releases, cancel cancels.
	r, err := e.svc.Templates.Rules(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.PromptForAdvisory = true
	if err := e.svc.Templates.SaveRules(e.ctx, e.agents["lead"], &r); err != nil {
		t.Fatal(err)
	}
	a := e.create("Research onboarding flows")
	b := e.create("Explore caching options")
	if n := len(e.prompts()); n != 2 {
		t.Fatalf("%d prompts with the setting on", n)
	}
	if _, err := e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["lead"], a.ID, models.AdvisoryDecision{Action: models.AdvisoryProceed, Reason: "fine"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.ready(), a.ID) || slices.Contains(e.ready(), b.ID) {
		t.Fatalf("ready %v after proceeding with %d", e.ready(), a.ID)
	}
	bt, err := e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["exec"], b.ID, models.AdvisoryDecision{Action: models.AdvisoryCancel})
	if err != nil || bt.State != models.TaskCancelled || len(e.prompts()) != 0 {
		t.Fatalf("cancel: %v %+v", err, bt)
	}
	if _, err := e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["exec"], b.ID, models.AdvisoryDecision{Action: "later"}); models.ErrorCode(err) != models.EINVALID {
		t.Fatalf("unknown action: %v", err)
	}
}

func TestAdvisoryPrompt(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			e := newInboxEnv(t, d)
			checkUnambiguousAdvisoryProceeds(t, e)

			// Ambiguous: held, not claimable, not startable.
			amb := e.create("Investigate the checkout timeout", "api/checkout.go")
			items := e.prompts()
			if len(items) != 1 || items[0].TaskID != amb.ID {
				t.Fatalf("prompts %+v", items)
			}
			var p models.AdvisoryPromptPayload
			if err := json.Unmarshal(items[0].Payload, &p); err != nil || !slices.Equal(p.Reasons, []string{models.AdvisoryReasonAmbiguous}) {
				t.Fatalf("payload %s: %v", items[0].Payload, err)
			}
			if slices.Contains(e.ready(), amb.ID) {
				t.Fatal("a held task is claimable")
			}
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], amb.ID, models.ActAssign, models.ActionInput{Agent: "dev"}); err != nil {
				t.Fatal(err)
			}
			_, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["dev"], amb.ID, models.ActStart, models.ActionInput{})
			advWantRule(t, err, models.ECONFLICT, models.RuleAdvisoryPrompt)
			// Reassigning it does not settle the prompt.
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], amb.ID, models.ActReassign, models.ActionInput{Agent: "dev"}); err != nil || len(e.prompts()) != 1 {
				t.Fatalf("reassign: %v, %d prompts", err, len(e.prompts()))
			}
			// Dismissing it like an advisory output is not how it is resolved.
			if _, err := e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["lead"], items[0].ID, ""); models.ErrorCode(err) != models.ECONFLICT {
				t.Fatalf("dismiss: %v", err)
			}

			// Only a lead or exec answers.
			_, err = e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["dev"], amb.ID, models.AdvisoryDecision{Action: models.AdvisoryProceed})
			advWantRule(t, err, models.EFORBIDDEN, "lead_or_exec")
			// Bad criteria: 422 with fields, nothing changed.
			_, err = e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["exec"], amb.ID, models.AdvisoryDecision{Action: models.AdvisoryMakeVerifiable,
				Criteria: []contract.Criterion{{Activity: "unit-test", Description: ""}}})
			var me *models.Error
			if models.ErrorCode(err) != models.EINVALID || !asErr(err, &me) || len(me.Fields) == 0 {
				t.Fatalf("bad criteria: %v", err)
			}
			if got, _ := e.db.GetTask(e.ctx, amb.ID); got.Contract.Verification.Type != contract.VerifyAdvisory || len(e.prompts()) != 1 {
				t.Fatal("a refused make_verifiable changed something")
			}
			// An exec may not put shell into the criteria.
			_, err = e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["exec"], amb.ID, models.AdvisoryDecision{Action: models.AdvisoryMakeVerifiable,
				Criteria: []contract.Criterion{{Activity: "unit-test", Description: "tests pass", Command: "go test ./..."}}})
			advWantRule(t, err, models.EFORBIDDEN, models.RuleCommandsNeedEditor)
			got, err := e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["exec"], amb.ID, models.AdvisoryDecision{Action: models.AdvisoryMakeVerifiable,
				Criteria: []contract.Criterion{{Activity: "unit-test", Description: "the checkout timeout test passes"}}})
			if err != nil {
				t.Fatal(err)
			}
			v := got.Contract.Verification
			if v.Type != contract.VerifyVerifiable || v.GeneratedFrom != contract.GeneratedUser || len(v.Criteria) != 1 || v.Criteria[0].Description != "the checkout timeout test passes" {
				t.Fatalf("made verifiable: %+v", v)
			}
			if len(e.prompts()) != 0 {
				t.Fatal("the prompt is still open")
			}
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["dev"], amb.ID, models.ActStart, models.ActionInput{}); err != nil {
				t.Fatalf("start after make_verifiable: %v", err)
			}
			_, err = e.svc.Tasks.ResolveAdvisoryPrompt(e.ctx, e.agents["lead"], amb.ID, models.AdvisoryDecision{Action: models.AdvisoryProceed})
			advWantRule(t, err, models.ECONFLICT, models.RuleAdvisoryPrompt)

			checkPromptSettingHoldsEvery(t, e)
		})
	}
}

func TestAdvisoryPromptMultiStepRun(t *testing.T) {
	e := newInboxEnv(t, storetest.Dialects()[0])
	tpl := &models.Template{Name: "two", Steps: []models.Step{
		{Name: "Build the page", Role: "developer", Brief: "build it"},
		{Name: "Research what users think of the page", Role: "developer", Brief: "ask around"},
	}}
	if err := e.svc.Templates.SaveTemplate(e.ctx, e.agents["lead"], tpl); err != nil {
		t.Fatal(err)
	}
	g := &models.Goal{Title: "Page"}
	if err := e.svc.Goals.CreateGoal(e.ctx, e.agents["lead"], g); err != nil {
		t.Fatal(err)
	}
	_, tasks, err := e.svc.Templates.StartRun(e.ctx, e.agents["lead"], g.ID, "two", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := e.prompts()
	if len(items) != 1 || items[0].TaskID != tasks[1].ID {
		t.Fatalf("prompts %+v for tasks %d, %d", items, tasks[0].ID, tasks[1].ID)
	}
	var p models.AdvisoryPromptPayload
	if json.Unmarshal(items[0].Payload, &p) != nil || !slices.Contains(p.Reasons, models.AdvisoryReasonMultiStep) {
		t.Fatalf("payload %s", items[0].Payload)
	}
}
