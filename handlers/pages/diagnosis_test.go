package pages_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// noisyDiagnosis is what a contradiction failure said before the runner named files
// relative to the workspace and the check stopped prefixing its own stage: the stage
// twice once composed, and the server's path to the output.
const noisyDiagnosis = `contradiction: the output claims completion ("TASK_COMPLETE") while admitting failure: ` +
	`"needs human" on line 3 of /srv/data/work/tasks/1/1/guide.md: "the deploy needs human sign-off"; ` +
	`finish that part yourself, or do not claim completion`

// noisyBlockedTask is a task the runner blocked after two attempts that failed with
// noisyDiagnosis, each attempt with its checks, as the runner stores them.
func (e *env) noisyBlockedTask(title string) *models.Task {
	e.t.Helper()
	t, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: title, Brief: "Brief of " + title,
		Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "{task_id}/guide.md", MaxAttempts: 2}}})
	mustTB(e.t, err)
	e.act("runner", t.ID, models.ActStart, models.ActionInput{})
	var blocked []models.BlockedAttempt
	for n := 1; n <= 2; n++ {
		now := time.Now().UTC()
		mustTB(e.t, e.db.CreateAttempt(e.ctx(), &models.Attempt{TaskID: t.ID, Number: n, AgentID: e.agents["bot"].ID, RunnerID: "r",
			Outcome: models.OutcomeFailed, Stage: models.StageContradiction, Diagnosis: noisyDiagnosis, StartedAt: now, FinishedAt: &now,
			Checks: []models.CheckResult{{Stage: models.StageProcess, Verdict: models.VerdictPass},
				{Stage: models.StageContradiction, Verdict: models.VerdictFail, Diagnosis: noisyDiagnosis}}}))
		blocked = append(blocked, models.BlockedAttempt{Attempt: n, Stage: models.StageContradiction, Failure: noisyDiagnosis})
	}
	runner, _ := e.svc.Agents.RunnerAgent(e.ctx())
	mustTB(e.t, e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx(), t.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockTask(e.ctx(), tx, runner, lt, blocked)
	}))
	return t
}

func mustTB(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDiagnosisShownOnce: the inbox card and the task page of a task blocked after two
// attempts with the same diagnosis show its sentence once, its stage once, and no
// server path.
func TestDiagnosisShownOnce(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	tk := e.noisyBlockedTask("Publish the guide")
	ex := e.browser().login("exec")
	for _, path := range []string{"/inbox", "/tasks/" + itoa64(tk.ID)} {
		body := ex.get(path).Body
		if n := strings.Count(body, "while admitting failure"); n != 1 {
			t.Errorf("%s shows the diagnosis %d times, want once", path, n)
		}
		for _, bad := range []string{"contradiction: contradiction", "/srv/data", "tasks/1/1/"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s shows %q", path, bad)
			}
		}
		if !strings.Contains(body, "line 3 of 1/guide.md") {
			t.Errorf("%s does not name the file relative to the workspace", path)
		}
	}
}

// TestAgentsPagesHideServerPaths: a worker's command and workdir (server paths) are on
// the agents pages for admins only.
func TestAgentsPagesHideServerPaths(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	w := &models.Agent{Name: "site-bot", Kind: models.KindWorker, Roles: []string{"developer"},
		Command: "/srv/agents/bin/run.sh", Workdir: "/srv/checkouts/site"}
	mustTB(t, e.svc.Agents.CreateAgent(e.ctx(), e.agents["admin"], w, ""))
	for _, who := range []string{"exec", "admin"} {
		b := e.browser().login(who)
		for _, path := range []string{"/agents", "/agents/" + itoa64(w.ID)} {
			body := b.get(path).Body
			if shown := strings.Contains(body, "/srv/"); shown != (who == "admin") {
				t.Errorf("%s on %s: server paths shown %v", who, path, shown)
			}
		}
	}
}
