package handlers_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// authorityTeam adds a worker agent (roles worker, developer), a human tester, an
// editor and a lead, each with a token, and returns a marker path outside any
// workspace that the shell smuggled into contracts tries to create.
func (e *apiEnv) authorityTeam() (marker string) {
	e.t.Helper()
	e.agent("w1", models.KindWorker, "worker", "developer")
	e.agent("tess", models.KindHuman, "tester")
	e.agent("eddie", models.KindHuman, "editor")
	e.agent("lena", models.KindHuman, "lead")
	marker = filepath.Join(os.TempDir(), "cs-authority-"+models.NewSecret("")[:16])
	e.t.Cleanup(func() { os.Remove(marker) })
	return marker
}

// taskCount is the number of stored tasks: a refused request must not change it.
func (e *apiEnv) taskCount() int {
	e.t.Helper()
	counts, err := e.db.CountTasks(context.Background(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// runStoredCommands runs, with /bin/sh in a scratch directory, every shell command a
// caller put into a stored task's contract (verify commands and criteria commands), as
// the runner's verify stage would once the task was worked on: a command that got
// stored leaves its trace.
func (e *apiEnv) runStoredCommands() {
	e.t.Helper()
	tasks, err := e.db.ListTasks(context.Background(), models.TaskFilter{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, tk := range tasks {
		cmds := slices.Clone(tk.Contract.Completion.Verify)
		for _, cr := range tk.Contract.Verification.Criteria {
			cmds = append(cmds, cr.Command)
		}
		for _, c := range cmds {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c)
			cmd.Dir = e.t.TempDir()
			_ = cmd.Run()
			cancel()
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// shellContracts are valid contracts carrying shell in each place a contract can: a
// verify command, a criterion's command (next to its activity).
func shellContracts(cmd string) map[string]map[string]any {
	return map[string]map[string]any{
		"completion.verify": {"completion": map[string]any{"type": "none", "verify": []string{"true", cmd}}},
		"criterion with activity and command": {"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "verifiable",
			"criteria": []any{map[string]any{"activity": "unit-test", "description": "tests pass", "command": cmd}}}},
	}
}

// TestTaskCommandsNeedEditor: a worker's or a tester's task whose contract carries
// shell is refused (403, commands_need_editor) and stores nothing, so the shell never
// runs; an editor's or a lead's is accepted as given; anyone may name a criterion by
// activity alone.
func TestTaskCommandsNeedEditor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		marker := e.authorityTeam()
		refused := shellContracts("touch " + marker)
		// Refused before it is validated: an invalid contract with shell is a 403 too.
		refused["invalid, with a command"] = map[string]any{"completion": map[string]any{"type": "none"}, "verification": map[string]any{
			"type": "verifiable", "criteria": []any{map[string]any{"description": "tests pass", "command": "touch " + marker}}}}
		for _, who := range []string{"w1", "tess"} {
			for name, ct := range refused {
				tasks, events := e.taskCount(), e.eventCount()
				r := e.do(who, "POST", "/tasks", map[string]any{"title": "Tidy the README", "role": "developer", "contract": ct})
				if r.Status != 403 || r.errRule() != models.RuleCommandsNeedEditor {
					t.Fatalf("%s, %s: status %d rule %q, want 403 %s: %s", who, name, r.Status, r.errRule(), models.RuleCommandsNeedEditor, r.Raw)
				}
				if e.taskCount() != tasks || e.eventCount() != events {
					t.Fatalf("%s, %s: a refused task stored %d tasks and %d events", who, name, e.taskCount()-tasks, e.eventCount()-events)
				}
			}
		}
		e.runStoredCommands()
		if exists(marker) {
			t.Fatal("a refused command ran")
		}

		// By activity alone: accepted, and the stored criterion carries no command (the
		// runner takes the activity's from the project rules).
		r := e.must(201, "w1", "POST", "/tasks", map[string]any{"title": "Fix the parser", "role": "developer",
			"contract": map[string]any{"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "verifiable",
				"criteria": []any{map[string]any{"activity": "unit-test", "description": "tests pass"}}}}})
		stored := e.storedTask(r.num("id"))
		if crs := stored.Contract.Verification.Criteria; len(crs) != 1 || crs[0].Activity != "unit-test" || crs[0].Command != "" {
			t.Fatalf("activity-only criterion stored as %+v", crs)
		}

		// An editor's and a lead's shell is stored as given, and would run.
		for _, who := range []string{"eddie", "lena"} {
			for name, ct := range shellContracts("touch " + marker) {
				r := e.must(201, who, "POST", "/tasks", map[string]any{"title": "Tidy the README", "role": "developer", "contract": ct})
				if got := e.storedTask(r.num("id")).Contract.CommandFields(); len(got) == 0 {
					t.Fatalf("%s, %s: stored without its command", who, name)
				}
			}
		}
		e.runStoredCommands()
		if !exists(marker) {
			t.Fatal("the editor's command did not run: the check above could not have seen one")
		}
	})
}

// storedTask reads a task from the store.
func (e *apiEnv) storedTask(id int64) *models.Task {
	e.t.Helper()
	tk, err := e.db.GetTask(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

// TestTemplateAndRulesCommandsNeedEditor: a worker or a tester cannot save a template
// whose steps carry shell, nor the project rules (which map activities to shell):
// 403 naming the rule, nothing stored, no event. An editor can.
func TestTemplateAndRulesCommandsNeedEditor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		marker := e.authorityTeam()
		touch := "touch " + marker
		tpl := func(completion, verification map[string]any) map[string]any {
			step := map[string]any{"role": "developer", "brief": "Build it", "completion": completion}
			if verification != nil {
				step["verification"] = verification
			}
			return map[string]any{"name": "ship", "steps": []any{step}}
		}
		none := map[string]any{"type": "none"}
		withVerify := tpl(map[string]any{"type": "none", "verify": []string{touch}}, nil)
		withCriterion := tpl(none, map[string]any{"type": "verifiable",
			"criteria": []any{map[string]any{"activity": "unit-test", "description": "tests pass", "command": touch}}})
		plain := tpl(none, nil)
		rules := models.DefaultRules()
		rules.Activities["unit-test"] = touch
		stacksOnly := models.DefaultRules() // no activity commands, but stacks: shell all the same
		stacksOnly.Activities, stacksOnly.FilePatterns = map[string]string{}, nil

		for _, who := range []string{"w1", "tess"} {
			events := e.eventCount()
			for _, c := range []struct {
				name, method, path string
				body               any
				rule               string
			}{
				{"template with a verify command", "POST", "/templates", withVerify, models.RuleCommandsNeedEditor},
				{"template with a criterion command", "POST", "/templates", withCriterion, models.RuleCommandsNeedEditor},
				{"template without commands", "POST", "/templates", plain, "editor_only"},
				{"rules", "PUT", "/rules", rules, models.RuleCommandsNeedEditor},
				{"rules with stacks only", "PUT", "/rules", stacksOnly, models.RuleCommandsNeedEditor},
			} {
				r := e.do(who, c.method, c.path, c.body)
				if r.Status != 403 || r.errRule() != c.rule {
					t.Fatalf("%s, %s: status %d rule %q, want 403 %s: %s", who, c.name, r.Status, r.errRule(), c.rule, r.Raw)
				}
			}
			if e.eventCount() != events {
				t.Fatalf("%s: refused saves stored %d events", who, e.eventCount()-events)
			}
			e.must(404, who, "GET", "/templates/ship", nil)
			if got := e.must(200, who, "GET", "/rules", nil).Body["activities"].(map[string]any)["unit-test"]; got != nil {
				t.Fatalf("%s: the rules' unit-test became %v", who, got)
			}
		}

		e.must(201, "eddie", "POST", "/templates", withCriterion)
		e.must(200, "eddie", "PUT", "/rules", rules)
		if got := e.must(200, "w1", "GET", "/rules", nil).Body["activities"].(map[string]any)["unit-test"]; got != touch {
			t.Fatalf("the editor's rules were not saved: unit-test is %v", got)
		}
	})
}
