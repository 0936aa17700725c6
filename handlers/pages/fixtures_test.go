package pages_test

import (
	"context"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// team creates the matrix's agents: one per role, a human builder and a worker.
func (e *env) team() {
	e.agent("lead", models.KindHuman, "lead")
	e.agent("exec", models.KindHuman, "exec")
	e.agent("dev", models.KindHuman, "developer")
	e.agent("reviewer", models.KindHuman, "reviewer")
	e.agent("tester", models.KindHuman, "tester")
	e.agent("admin", models.KindHuman, "admin")
	e.agent("bot", models.KindWorker, "developer")
}

func (e *env) ctx() context.Context { return context.Background() }

// act applies an action as a named agent (or the runner) and fails on error.
func (e *env) act(as string, id int64, act models.Action, in models.ActionInput) {
	e.t.Helper()
	actor := e.agents[as]
	if as == "runner" {
		r, err := e.svc.Agents.RunnerAgent(e.ctx())
		if err != nil {
			e.t.Fatal(err)
		}
		actor = r
	}
	if _, err := e.svc.Tasks.TaskAction(e.ctx(), actor, id, act, in); err != nil {
		e.t.Fatalf("%s %s task %d: %v", as, act, id, err)
	}
}

// humanTask creates a task built by dev, approved by a reviewer and verified by a
// tester, walked to state want.
func (e *env) humanTask(title string, goal *int64, want models.TaskState) *models.Task {
	e.t.Helper()
	spec := models.TaskSpec{Title: title, Brief: "Brief of " + title, Role: "developer", GoalID: goal,
		Approve: "reviewer", Verify: "tester"}
	if want != models.TaskPending {
		spec.Assignee = "dev"
	}
	t, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	steps := []struct {
		state models.TaskState
		as    string
		act   models.Action
		in    models.ActionInput
	}{
		{models.TaskAssigned, "dev", models.ActStart, models.ActionInput{}},
		{models.TaskInProgress, "dev", models.ActSubmit, models.ActionInput{Summary: "done it"}},
		{models.TaskReview, "reviewer", models.ActApprove, models.ActionInput{}},
		{models.TaskCompleted, "tester", models.ActVerify, models.ActionInput{Notes: "works"}},
	}
	for _, s := range steps {
		if cur := e.state(t.ID); cur == want || cur != s.state {
			break
		}
		e.act(s.as, t.ID, s.act, s.in)
	}
	if got := e.state(t.ID); got != want {
		e.t.Fatalf("fixture %q: state %s, want %s", title, got, want)
	}
	return t
}

// blockedTask creates a worker task that the runner blocked after two attempts.
func (e *env) blockedTask(title string, goal *int64) *models.Task {
	e.t.Helper()
	t, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: title, Brief: "Brief of " + title,
		Role: "developer", GoalID: goal, Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MinLength: 100,
			Verify: []string{"go test ./..."}, MaxAttempts: 2}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.act("runner", t.ID, models.ActStart, models.ActionInput{})
	runner, _ := e.svc.Agents.RunnerAgent(e.ctx())
	err = e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx(), t.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockTask(e.ctx(), tx, runner, lt, []models.BlockedAttempt{
			{Attempt: 1, Stage: models.StageMechanical, Failure: "out/" + itoa64(t.ID) + ".md is missing"},
			{Attempt: 2, Stage: models.StageVerify, Failure: "go test ./... exited 1"},
		})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// pendingGoal creates a goal waiting for verification (one verified task).
func (e *env) pendingGoal(title string) *models.Goal {
	e.t.Helper()
	g := &models.Goal{Title: title, Description: "Description of " + title}
	if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
		e.t.Fatal(err)
	}
	e.humanTask("task of "+title, &g.ID, models.TaskVerified)
	if s := e.goalState(g.ID); s != models.GoalPendingVerify {
		e.t.Fatalf("goal %d: %s", g.ID, s)
	}
	return g
}

func (e *env) state(id int64) models.TaskState {
	e.t.Helper()
	t, err := e.svc.Store().GetTask(e.ctx(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return t.State
}

func (e *env) goalState(id int64) models.GoalState {
	e.t.Helper()
	g, err := e.svc.Store().GetGoal(e.ctx(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return g.State
}

func itoa64(n int64) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
