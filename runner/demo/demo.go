// Package demo seeds an empty Countersign database with worker agents that run small
// shell scripts, a workflow template, a goal and a run of the template, so that a
// fresh `countersign serve --demo` shows real work within a minute: a revision that
// fixes its output, a reviewer's signal, an advisory result in the inbox, a task
// blocked with its evidence, and a task waiting for a person to verify it.
package demo

import (
	"context"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

//go:embed scripts/*.sh
var scripts embed.FS

// Names of what Seed creates.
const (
	TemplateName = "demo-onboarding"
	GoalTitle    = "Demo: publish the onboarding guide"
	LeadName     = "demo-lead"
	TesterName   = "tess"
)

// workers are the demo worker agents: name, role, script.
var workers = []struct{ name, role, script string }{
	{"demo-writer", "writer", "writer.sh"},       // fails once, fixes its output on the revision
	{"demo-reviewer", "reviewer", "reviewer.sh"}, // writes a signal file
	{"demo-dev", "developer", "developer.sh"},    // always succeeds
	{"demo-ops", "ops", "ops.sh"},                // always blocks (contradiction)
}

// Seed fills a database that has no worker agents yet; on any other database it does
// nothing, so it is safe on every start. It writes the demo scripts to
// <dataDir>/demo/ (mode 0755) and creates the worker agents running them, a human
// tester, a demo lead when no person with the lead role exists, the template, a goal,
// a run of the template for the goal, and one task left for the tester to verify.
// Each person it creates (the tester, the demo lead) gets a one-time password, which
// it returns so that serve prints it: every persona can sign in.
func Seed(ctx context.Context, svc *models.Service, dataDir string) ([]Person, error) {
	st := svc.Store()
	agents, err := st.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	var lead *models.Agent
	for i := range agents {
		a := &agents[i]
		if a.Kind == models.KindWorker {
			return nil, nil
		}
		if lead == nil && a.Kind == models.KindHuman && a.HasRole(models.RoleLead) && a.HasRole(models.RoleExec) && !a.Disabled {
			lead = a
		}
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, "demo"))
	if err != nil {
		return nil, err
	}
	if err := writeScripts(dir); err != nil {
		return nil, err
	}
	var people []Person
	if lead == nil {
		lead = &models.Agent{Name: LeadName, Kind: models.KindHuman, Roles: []string{models.RoleLead, models.RoleExec}}
		p, err := createPerson(ctx, svc, lead)
		if err != nil {
			return nil, err
		}
		people = append(people, p)
	}
	for _, w := range workers {
		a := &models.Agent{Name: w.name, Kind: models.KindWorker, Roles: []string{w.role},
			Command: "sh " + shellQuote(filepath.Join(dir, w.script)),
			// The scripts live in the data dir, which a confined worker cannot read.
			Sandbox: models.AgentSandbox{Read: []string{dir}}}
		if err := svc.Agents.CreateAgent(ctx, models.System, a, ""); err != nil {
			return nil, fmt.Errorf("demo: agent %s: %w", w.name, err)
		}
	}
	tester := &models.Agent{Name: TesterName, Kind: models.KindHuman, Roles: []string{"tester", "reviewer"}}
	p, err := createPerson(ctx, svc, tester)
	if err != nil {
		return nil, err
	}
	people = append(people, p)
	tpl := Template()
	if err := svc.Templates.SaveTemplate(ctx, lead, tpl); err != nil {
		return nil, fmt.Errorf("demo: template: %w", err)
	}
	g := &models.Goal{Title: GoalTitle, Project: "demo",
		Description: "A demo goal: each step is done by a worker script, checked by the runner, and verified or blocked."}
	if err := svc.Goals.CreateGoal(ctx, lead, g); err != nil {
		return nil, fmt.Errorf("demo: goal: %w", err)
	}
	if _, _, err := svc.Templates.StartRun(ctx, lead, g.ID, tpl.Name, 0, map[string]string{"product": "Countersign"}); err != nil {
		return nil, fmt.Errorf("demo: run: %w", err)
	}
	_, err = svc.Tasks.CreateTask(ctx, lead, models.TaskSpec{
		Title:  "Proofread the release notes",
		Brief:  "Proofread the release notes and write the corrected text.",
		Role:   "developer",
		GoalID: &g.ID,
		Verify: "tester", // the runner checks, then a person verifies
		Contract: contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionFile, Path: "{task_id}/notes.md", MinLength: 100, DoneToken: "TASK_COMPLETE", Timeout: minute()},
			Verification: contract.Verification{Type: contract.VerifySkip, Criteria: []contract.Criterion{outputExists()}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: task: %w", err)
	}
	return people, nil
}

// Person is a human agent Seed created, with its one-time password.
type Person struct {
	Name     string
	Roles    []string
	Password string
}

// createPerson creates the human agent a with a new one-time password.
func createPerson(ctx context.Context, svc *models.Service, a *models.Agent) (Person, error) {
	pw := models.NewPassword()
	if err := svc.Agents.CreateAgent(ctx, models.System, a, pw); err != nil {
		return Person{}, fmt.Errorf("demo: %w", err)
	}
	return Person{Name: a.Name, Roles: a.Roles, Password: pw}, nil
}

// Template is the demo workflow: a writer drafts (and, told why, fixes) a guide; a
// reviewer approves it with a signal file; an advisory investigation lands in the
// inbox; publishing blocks because the worker admits it needs a person.
func Template() *models.Template {
	verifiable := contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{outputExists()}}
	return &models.Template{
		Name:        TemplateName,
		Description: "Demo: write, review, investigate and publish an onboarding guide.",
		Steps: []models.Step{
			{
				Name: "Draft the onboarding guide", Role: "writer",
				Brief:        "Write the onboarding guide for {{product}}: the steps a new user takes, in order.",
				Completion:   contract.Completion{Type: contract.CompletionFile, Path: "{task_id}/guide.md", MinLength: 300, DoneToken: "TASK_COMPLETE", Timeout: minute()},
				Verification: verifiable,
			},
			{
				Name: "Review the guide", Role: "reviewer",
				Brief:        "Review the onboarding guide and record your verdict.",
				Completion:   contract.Completion{Type: contract.CompletionSignal, Path: "{task_id}/review.json", Signal: "approved", Timeout: minute()},
				Verification: verifiable,
			},
			{
				Name: "Investigate onboarding drop-off", Role: "developer",
				Brief:        "Investigate where new users of {{product}} drop off during onboarding and recommend a change.",
				Completion:   contract.Completion{Type: contract.CompletionFile, Path: "{task_id}/findings.md", Timeout: minute()},
				Verification: contract.Verification{Type: contract.VerifyAdvisory},
			},
			{
				Name: "Publish the guide", Role: "ops",
				Brief:        "Publish the reviewed guide to production.",
				Completion:   contract.Completion{Type: contract.CompletionFile, Path: "{task_id}/publish.log", MinLength: 20, DoneToken: "TASK_COMPLETE", Timeout: minute()},
				Verification: verifiable,
			},
		},
	}
}

// outputExists is the demo's one criterion, with its own command so that the demo
// does not depend on the project rules' activity commands.
func outputExists() contract.Criterion {
	return contract.Criterion{Activity: "output", Description: "The output file exists and is not empty",
		Timing: contract.TimingImmediate, Command: `test -s "$COUNTERSIGN_OUTPUT_PATH"`}
}

func minute() contract.Duration { return contract.Duration{Duration: time.Minute} }

// writeScripts writes the embedded scripts to dir, executable.
func writeScripts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := scripts.ReadDir("scripts")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := scripts.ReadFile("scripts/" + e.Name())
		if err != nil {
			return err
		}
		p := filepath.Join(dir, e.Name())
		if err := os.WriteFile(p, b, 0o755); err != nil {
			return err
		}
		// WriteFile keeps the mode of an existing file; make sure it is executable.
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote quotes a path for the admin-defined command string. Only the operator's
// data dir goes in here, never task data.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
