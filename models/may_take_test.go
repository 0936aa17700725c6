package models

import (
	"slices"
	"testing"
)

// TestMayTake: who may take each action, by role, assignee, builder and creator, the
// policies with separation of duties, and an attempt token's scope (which cancels only
// the tasks its worker created).
func TestMayTake(t *testing.T) {
	lead := &Agent{ID: 1, Name: "lena", Kind: KindHuman, Roles: []string{RoleLead}}
	exec := &Agent{ID: 2, Name: "eve", Kind: KindHuman, Roles: []string{RoleExec}}
	bob := &Agent{ID: 3, Name: "bob", Kind: KindHuman, Roles: []string{"developer"}}
	tess := &Agent{ID: 4, Name: "tess", Kind: KindHuman, Roles: []string{"tester"}}
	carl := &Agent{ID: 5, Name: "carl", Kind: KindHuman, Roles: []string{"developer"}}
	runner := &Agent{ID: 6, Name: RunnerAgentName, Kind: KindSystem}
	task := &Task{ID: 10, CreatorID: carl.ID, AssigneeID: &bob.ID, BuilderID: &bob.ID, Verify: "tester"}
	child := &Task{ID: 11, CreatorID: bob.ID, ParentTaskID: &task.ID}
	scoped := &Agent{ID: bob.ID, Name: "bob", Kind: KindWorker, Roles: bob.Roles, Scope: &TokenScope{TaskID: task.ID}}
	const team = 5

	may := func(a *Agent, tk *Task) []string {
		var out []string
		for _, act := range Actions {
			if MayTake(a, tk, act, bob, team) {
				out = append(out, string(act))
			}
		}
		return out
	}
	for _, tc := range []struct {
		who  string
		a    *Agent
		tk   *Task
		want []string
	}{
		{"lead", lead, task, []string{"assign", "approve", "reject", "reopen", "cancel", "retry", "reassign", "answer", "amend"}},
		{"exec", exec, task, []string{"assign", "approve", "reject", "cancel", "retry", "reassign", "accept", "answer", "amend"}},
		{"the builder and assignee", bob, task, []string{"start", "submit"}},
		{"a tester (the verify policy)", tess, task, []string{"approve", "reject", "verify", "reject-verification"}},
		{"the creator", carl, task, []string{"approve", "reject", "cancel", "answer", "amend"}},
		{"the runner", runner, task, []string{"assign", "start", "submit", "block", "ask"}},
		{"an attempt token on its own task", scoped, task, nil},
		{"an attempt token on a task it created", scoped, child, []string{"cancel"}},
		{"nobody", nil, task, nil},
	} {
		if got := may(tc.a, tc.tk); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.who, got, tc.want)
		}
	}
}
