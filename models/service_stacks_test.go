package models_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
)

// noTools is a lookPath that finds nothing.
func noTools(string) (string, error) { return "", errors.New("not found") }

// workspaceDir writes files into a fresh temp dir.
func workspaceDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFixStackCriteria: the runner completes an auto contract from a real workspace
// in its transaction, stores it, and says so with one event; a second call (another
// attempt, a takeover) changes nothing.
// checkContractCompletedEvent checks that completing task taskID's contract logged one
// contract.completed event by the runner (actorID), naming the stacks, the step it
// completed, the criteria and the workspace facts they came from.
func checkContractCompletedEvent(t *testing.T, e *inboxEnv, taskID, actorID int64) {
	t.Helper()
	evs := taskEvents(t, e, taskID, models.EventContractCompleted)
	if len(evs) != 1 || evs[0].ActorID == nil || *evs[0].ActorID != actorID {
		t.Fatalf("events %+v", evs)
	}
	var data struct {
		Stacks        []string            `json:"stacks"`
		Step          string              `json:"step"`
		Criteria      int                 `json:"criteria"`
		StackCriteria []map[string]string `json:"stack_criteria"`
		Facts         struct {
			Files      []string          `json:"files"`
			Configured map[string]string `json:"configured"`
		} `json:"facts"`
	}
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(data.Stacks, []string{"python", "make"}) || data.Step != contract.WorkspacePending || data.Criteria != 3 ||
		len(data.StackCriteria) != 3 || data.StackCriteria[0]["command"] != "python3 -m pytest -q" ||
		!slices.Equal(data.Facts.Files, []string{"Makefile", "pyproject.toml"}) || data.Facts.Configured["ruff"] != "pyproject.toml" {
		t.Fatalf("event data %s", evs[0].Data)
	}
}

// checkExplicitSkipWaitsForNothing checks that a task created with an explicit skip
// gets no stack criteria and no event when its workspace is seen.
func checkExplicitSkipWaitsForNothing(t *testing.T, e *inboxEnv, runner *models.Agent) {
	t.Helper()
	skip, err := e.svc.Tasks.CreateTask(e.ctx, models.System, models.TaskSpec{Title: "Fix the parser", Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Verification: contract.Verification{Type: contract.VerifySkip}}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, skip.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.FixStackCriteria(e.ctx, tx, runner, lt, contract.WorkspaceFacts{Files: []string{"go.mod"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	skipped, _ := e.db.GetTask(e.ctx, skip.ID)
	if len(skipped.Contract.Verification.Criteria) != 0 || skipped.Contract.Verification.Workspace != "" || len(taskEvents(t, e, skip.ID, models.EventContractCompleted)) != 0 {
		t.Fatalf("explicit skip %+v", skipped.Contract.Verification)
	}
}

// checkCancelledContractNotCompleted checks that a cancelled task's contract is not
// completed (ECONFLICT), so stale work cannot change it.
func checkCancelledContractNotCompleted(t *testing.T, e *inboxEnv, runner *models.Agent, facts contract.WorkspaceFacts) {
	t.Helper()
	late, _ := e.workerTask("Fix the lexer")
	if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], late.ID, models.ActCancel, models.ActionInput{Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, late.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.FixStackCriteria(e.ctx, tx, runner, lt, facts)
	})
	if models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestFixStackCriteria(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newInboxEnv(t, dialect)
			task, runner := e.workerTask("Fix the crash in the parser")
			if task.Contract.Verification.Workspace != contract.WorkspacePending {
				t.Fatalf("created %+v", task.Contract.Verification)
			}
			dir := workspaceDir(t, map[string]string{
				"pyproject.toml": "[project]\nname = \"calc\"\n[tool.pytest.ini_options]\n[tool.ruff]\n",
				"Makefile":       "test:\n\tpython3 -m pytest\n",
			})
			facts, err := contract.DetectWorkspace(dir, noTools)
			if err != nil {
				t.Fatal(err)
			}
			fix := func(actor *models.Agent) (*models.Task, error) {
				var lt *models.Task
				err := e.db.InTx(e.ctx, func(tx models.Tx) error {
					var err error
					if lt, err = tx.LockTask(e.ctx, task.ID); err != nil {
						return err
					}
					return e.svc.Attempts.FixStackCriteria(e.ctx, tx, actor, lt, facts)
				})
				return lt, err
			}
			if _, err := fix(e.agents["lead"]); models.ErrorCode(err) != models.EFORBIDDEN {
				t.Fatalf("a lead completed the contract: %v", err)
			}
			lt, err := fix(runner)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := e.db.GetTask(e.ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			v := stored.Contract.Verification
			var got []string
			for _, c := range v.Criteria {
				got = append(got, c.Stack+": "+c.Command+" ("+strings.Join(c.Tools, ",")+") "+c.Description)
			}
			want := []string{
				"python: python3 -m pytest -q (python3) Unit tests pass (pytest configured in pyproject.toml)",
				"python: ruff check . (ruff) ruff reports no problems (ruff configured in pyproject.toml)",
				"make: make test (make) make test passes (Makefile has a test target)",
			}
			if v.Workspace != contract.WorkspaceDetected || !slices.Equal(v.Stacks, []string{"python", "make"}) || !slices.Equal(got, want) {
				t.Fatalf("stored %+v\ngot %q", v, got)
			}
			if !slices.Equal(lt.Contract.Verification.Stacks, v.Stacks) || len(lt.Contract.Verification.Criteria) != 3 {
				t.Fatalf("the caller's task was not updated: %+v", lt.Contract.Verification)
			}
			for _, c := range v.Criteria {
				if strings.HasPrefix(c.Command, "go ") || strings.Contains(c.Command, "gofmt") {
					t.Fatalf("a Go command in a Python workspace: %+v", c)
				}
			}
			checkContractCompletedEvent(t, e, task.ID, runner.ID)

			// Idempotent: a second attempt's call, even with other facts, keeps the
			// contract and writes no event.
			facts = contract.WorkspaceFacts{Files: []string{"go.mod"}}
			if _, err := fix(runner); err != nil {
				t.Fatal(err)
			}
			again, _ := e.db.GetTask(e.ctx, task.ID)
			if again.Contract.Hash() != stored.Contract.Hash() || len(taskEvents(t, e, task.ID, models.EventContractCompleted)) != 1 {
				t.Fatalf("completed twice: %+v", again.Contract.Verification)
			}

			checkExplicitSkipWaitsForNothing(t, e, runner)

			checkCancelledContractNotCompleted(t, e, runner, facts)
		})
	}
}

// TestBlockedPayloadExpandsPaths: the blocked task's evidence names the output path
// the worker was told, not the placeholder.
func TestBlockedPayloadExpandsPaths(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newInboxEnv(t, dialect)
			it := e.blocked("Write the report")
			var p models.BlockedPayload
			if err := json.Unmarshal(it.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if want := "out/" + strconv.FormatInt(it.TaskID, 10) + ".md"; p.CompletionSpec.Path != want || strings.Contains(string(it.Payload), contract.TaskIDPlaceholder) {
				t.Fatalf("path %q, want %q; payload %s", p.CompletionSpec.Path, want, it.Payload)
			}
		})
	}
}

// TestCheckWorkspace: editors check which stacks a directory on the server matches;
// the path is absolute and only read.
func TestCheckWorkspace(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newInboxEnv(t, dialect)
			dir := workspaceDir(t, map[string]string{"go.mod": "module m\n", "package.json": `{"scripts":{"test":"vitest"}}`, "yarn.lock": ""})
			before, _ := os.ReadDir(dir)
			lead := e.agents["lead"]
			res, err := e.svc.Templates.CheckWorkspace(e.ctx, lead, dir, func(n string) (string, error) {
				if n == "go" {
					return "/usr/local/go/bin/go", nil
				}
				return "", errors.New("no")
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 2 || res.Matches[0].Name != "go" || res.Matches[1].Name != "node" ||
				res.Matches[1].Commands[0].Command != "yarn test" || !slices.Equal(res.Matches[1].Commands[0].Missing, []string{"yarn"}) ||
				len(res.Matches[0].Commands[0].Missing) != 0 || !slices.Equal(res.Facts.Tools, []string{"go"}) {
				t.Fatalf("%+v", res)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before) {
				t.Fatal("checking a workspace wrote into it")
			}
			if _, err := e.svc.Templates.CheckWorkspace(e.ctx, e.agents["dev"], dir, nil); models.ErrorCode(err) != models.EFORBIDDEN {
				t.Fatalf("a developer checked a directory: %v", err)
			}
			file := filepath.Join(dir, "go.mod")
			for path, msg := range map[string]string{
				"":                         "is required",
				"relative/dir":             "must be an absolute path",
				filepath.Join(dir, "nope"): "no such directory",
				file:                       "is not a directory",
			} {
				_, err := e.svc.Templates.CheckWorkspace(e.ctx, lead, path, nil)
				var me *models.Error
				if !errors.As(err, &me) || me.Code != models.EINVALID || !strings.Contains(me.Fields["path"], msg) {
					t.Fatalf("%q: %v", path, err)
				}
			}
		})
	}
}

func taskEvents(t *testing.T, e *inboxEnv, taskID int64, typ string) []models.Event {
	t.Helper()
	evs, err := e.db.ListTaskEvents(e.ctx, taskID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []models.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}
