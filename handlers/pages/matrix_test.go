package pages_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// matrixRoles are the signed-in agents of the matrix, one per role (see team).
var matrixRoles = []string{"lead", "exec", "dev", "reviewer", "tester", "admin"}

// matrixCase is one page action: a fixture in the right state, the page form and the
// API request that take it, and who the service's rules allow.
type matrixCase struct {
	name    string
	allowed []string
	// setup returns the form path and values, the API path and body, and the task
	// (0 for goal actions) or goal whose state must not change when refused.
	setup func(e *env) (page string, form url.Values, api string, body any, taskID, goalID int64)
}

func taskCase(name string, state models.TaskState, blocked bool, act models.Action, in models.ActionInput, inbox bool, allowed ...string) matrixCase {
	return matrixCase{name: name, allowed: allowed, setup: func(e *env) (string, url.Values, string, any, int64, int64) {
		var t *models.Task
		if blocked {
			t = e.blockedTask("matrix "+name, nil)
		} else {
			t = e.humanTask("matrix "+name, nil, state)
		}
		form := url.Values{"agent": {in.Agent}, "reason": {in.Reason}, "notes": {in.Notes}, "summary": {in.Summary}}
		if inbox {
			form.Set("back", "/inbox")
		}
		return "/tasks/" + itoa64(t.ID) + "/action/" + string(act), form, "/tasks/" + itoa64(t.ID) + "/" + string(act), in, t.ID, 0
	}}
}

func matrixCases() []matrixCase {
	reason := models.ActionInput{Reason: "because the test says so"}
	return []matrixCase{
		{name: "goal verify", allowed: []string{"lead"}, setup: func(e *env) (string, url.Values, string, any, int64, int64) {
			g := e.pendingGoal("matrix verify")
			return "/goals/" + itoa64(g.ID) + "/verify", url.Values{"notes": {"integration tested"}},
				"/goals/" + itoa64(g.ID) + "/verify", map[string]any{"notes": "integration tested"}, 0, g.ID
		}},
		{name: "goal reject", allowed: []string{"lead"}, setup: func(e *env) (string, url.Values, string, any, int64, int64) {
			g := e.pendingGoal("matrix reject")
			return "/goals/" + itoa64(g.ID) + "/reject",
				url.Values{"reason": {"login broken"}, "fix_title": {"Fix login", "", ""}, "fix_brief": {"Make login work", "", ""}, "fix_role": {"developer", "", ""}, "fix_assignee": {"", "", ""}},
				"/goals/" + itoa64(g.ID) + "/reject", map[string]any{"reason": "login broken", "fix_tasks": []map[string]any{{"title": "Fix login", "brief": "Make login work", "role": "developer"}}}, 0, g.ID
		}},
		taskCase("assign", models.TaskPending, false, models.ActAssign, models.ActionInput{Agent: "dev"}, false, "lead", "exec"),
		taskCase("start", models.TaskAssigned, false, models.ActStart, models.ActionInput{}, false, "dev"),
		taskCase("submit", models.TaskInProgress, false, models.ActSubmit, models.ActionInput{Summary: "done"}, false, "dev"),
		taskCase("approve", models.TaskReview, false, models.ActApprove, models.ActionInput{}, false, "reviewer"),
		taskCase("reject", models.TaskReview, false, models.ActReject, reason, false, "reviewer"),
		taskCase("verify", models.TaskCompleted, false, models.ActVerify, models.ActionInput{Notes: "ok"}, false, "tester"),
		taskCase("reject-verification", models.TaskCompleted, false, models.ActRejectVerification, reason, false, "tester"),
		taskCase("reopen", models.TaskVerified, false, models.ActReopen, reason, false, "lead"),
		taskCase("cancel", models.TaskPending, false, models.ActCancel, models.ActionInput{}, false, "lead", "exec"),
		taskCase("retry", "", true, models.ActRetry, models.ActionInput{Reason: "write the file first"}, false, "lead", "exec"),
		taskCase("reassign", "", true, models.ActReassign, models.ActionInput{Agent: "dev"}, false, "lead", "exec"),
		taskCase("accept", "", true, models.ActAccept, reason, false, "exec"),
		taskCase("inbox retry", "", true, models.ActRetry, models.ActionInput{Reason: "write the file first"}, true, "lead", "exec"),
		taskCase("inbox reassign", "", true, models.ActReassign, models.ActionInput{Agent: "dev"}, true, "lead", "exec"),
		taskCase("inbox accept", "", true, models.ActAccept, reason, true, "exec"),
		taskCase("inbox cancel", "", true, models.ActCancel, models.ActionInput{}, true, "lead", "exec"),
		{name: "inbox dismiss", allowed: []string{"lead", "exec"}, setup: func(e *env) (string, url.Values, string, any, int64, int64) {
			t, it := e.advisoryTask("matrix dismiss")
			return "/inbox/" + itoa64(it.ID) + "/dismiss", url.Values{"reason": {"seen"}, "back": {"/inbox"}},
				"/inbox/" + itoa64(it.ID) + "/resolve", map[string]any{"note": "seen"}, t.ID, 0
		}},
	}
}

// TestAuthorizationMatrix takes every page action as every role, through the pages
// (session + CSRF) and through the JSON API (bearer), on both dialects: the outcome
// is the service's rule, and a refused action changes nothing. Each action is a
// parallel subtest with a database of its own, so that counting the stored events
// before and after each request reads that action's events only.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		for _, mc := range matrixCases() {
			t.Run(mc.name, func(t *testing.T) {
				t.Parallel()
				runMatrixCase(t, dialect, mc)
			})
		}
	})
}

// runMatrixCase takes the action of mc as every role, through the page and the API, on a
// fresh database of dialect with the team signed in.
func runMatrixCase(t *testing.T, dialect string, mc matrixCase) {
	e := newEnv(t, dialect)
	e.team()
	browsers := map[string]*browser{}
	for _, r := range matrixRoles {
		browsers[r] = e.browser().login(r)
	}
	for _, role := range matrixRoles {
		allowed := slices.Contains(mc.allowed, role)
		for _, via := range []string{"page", "api"} {
			page, form, api, body, taskID, goalID := mc.setup(e)
			before, tState, gState := e.eventCount(), stateOr(e, taskID), goalOr(e, goalID)
			var status int
			var raw string
			if via == "page" {
				r := browsers[role].post(page, form)
				status, raw = r.Status, r.Body
			} else {
				status, raw = e.apiDo(role, api, body)
			}
			want := map[bool]map[string]int{true: {"page": 303, "api": 200}, false: {"page": 403, "api": 403}}[allowed][via]
			if status != want {
				t.Errorf("%s as %s via %s: status %d, want %d: %.300s", mc.name, role, via, status, want, raw)
				continue
			}
			if !allowed {
				if n := e.eventCount(); n != before {
					t.Errorf("%s as %s via %s: refused but %d events were added", mc.name, role, via, n-before)
				}
				if s := stateOr(e, taskID); s != tState {
					t.Errorf("%s as %s via %s: refused but task moved %s → %s", mc.name, role, via, tState, s)
				}
				if s := goalOr(e, goalID); s != gState {
					t.Errorf("%s as %s via %s: refused but goal moved %s → %s", mc.name, role, via, gState, s)
				}
			}
		}
	}
}

func stateOr(e *env, id int64) models.TaskState {
	if id == 0 {
		return ""
	}
	return e.state(id)
}

func goalOr(e *env, id int64) models.GoalState {
	if id == 0 {
		return ""
	}
	return e.goalState(id)
}

// apiDo POSTs body as JSON to /api/v1<path> with name's bearer token.
func (e *env) apiDo(name, path string, body any) (int, string) {
	e.t.Helper()
	j, _ := json.Marshal(body)
	status, raw := handlertest.Request(e.t, "POST", e.srv.URL+"/api/v1"+path, e.tokens[name], "application/json", bytes.NewReader(j))
	return status, strings.TrimSpace(string(raw))
}
