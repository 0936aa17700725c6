package mcp_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/models"
)

// TestListTools: tools/list returns the 14 tools, each with a description, input and
// output schemas and the arguments the seed and the rules need.
func TestListTools(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("a", "developer")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := e.clients["a"].ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		byName := map[string]*sdk.Tool{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			byName[tool.Name] = tool
			if len(tool.Description) < 40 {
				t.Errorf("%s: description too thin to act on: %q", tool.Name, tool.Description)
			}
			schema, _ := tool.InputSchema.(map[string]any)
			if schema["type"] != "object" {
				t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
			}
			props, _ := schema["properties"].(map[string]any)
			for p, v := range props {
				if d, _ := v.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s.%s has no description", tool.Name, p)
				}
			}
			if tool.OutputSchema == nil {
				t.Errorf("%s has no output schema", tool.Name)
			}
			if strings.Contains(tool.Name, "complet") {
				t.Errorf("%s: no tool may post a completion", tool.Name)
			}
		}
		want := []string{"amend_task", "answer_question", "approve_task", "ask_question", "create_goal", "create_task", "goal_status", "inbox_list", "link_task_to_goal",
			"reject_goal", "reject_task", "reject_verification", "reopen_task", "resolve_advisory", "submit_for_review", "update_task", "verify_goal", "verify_task"}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		if got := slices.Sorted(slices.Values(mcp.ToolNames)); !slices.Equal(got, want) {
			t.Fatalf("ToolNames %v", got)
		}
		// The seed's arguments are in the schemas, and the ones the rules need are required.
		for tool, args := range map[string][]string{
			"create_goal":         {"creator", "title", "description", "project"},
			"link_task_to_goal":   {"task_id", "goal_id"},
			"goal_status":         {"goal_id"},
			"verify_task":         {"agent_name", "task_id", "notes"},
			"reject_verification": {"agent_name", "task_id", "reason"},
			"verify_goal":         {"agent_name", "goal_id", "notes"},
			"reject_goal":         {"agent_name", "goal_id", "reason", "fix_tasks"},
			"create_task":         {"creator", "title", "brief", "role", "assign_to", "goal_id", "approve", "verify", "depends_on"},
			"update_task":         {"agent_name", "task_id", "status"},
			"submit_for_review":   {"agent_name", "task_id", "summary", "files_changed"},
			"approve_task":        {"agent_name", "task_id"},
			"reject_task":         {"agent_name", "task_id", "reason"},
			"reopen_task":         {"agent_name", "task_id", "reason"},
			"inbox_list":          {"kind"},
			"resolve_advisory":    {"agent_name", "task_id", "action", "criteria", "reason"},
		} {
			props := byName[tool].InputSchema.(map[string]any)["properties"].(map[string]any)
			for _, a := range args {
				if _, ok := props[a]; !ok {
					t.Errorf("%s has no argument %s", tool, a)
				}
			}
		}
		for tool, req := range map[string][]string{"reject_verification": {"reason", "task_id"}, "verify_goal": {"goal_id", "notes"},
			"reject_goal": {"goal_id", "reason", "fix_tasks"}, "update_task": {"status", "task_id"}, "resolve_advisory": {"task_id", "action"}} {
			got, _ := byName[tool].InputSchema.(map[string]any)["required"].([]any)
			for _, r := range req {
				if !slices.Contains(got, any(r)) {
					t.Errorf("%s: %s is not required (%v)", tool, r, got)
				}
			}
		}
		checkFixTaskSchema(t, byName)
	})
}

// checkFixTaskSchema checks that a fix task of reject_goal takes create_task's fields
// (not its creator or goal), only its title required.
func checkFixTaskSchema(t *testing.T, byName map[string]*sdk.Tool) {
	t.Helper()
	// A fix task of reject_goal takes create_task's fields (not its creator or goal).
	fix, _ := byName["reject_goal"].InputSchema.(map[string]any)["properties"].(map[string]any)["fix_tasks"].(map[string]any)
	items, _ := fix["items"].(map[string]any)
	fields, _ := items["properties"].(map[string]any)
	for _, a := range []string{"title", "brief", "role", "assign_to", "approve", "verify", "depends_on"} {
		if _, ok := fields[a]; !ok {
			t.Errorf("reject_goal fix_tasks items have no %s: %v", a, fix)
		}
	}
	for _, a := range []string{"creator", "goal_id"} {
		if _, ok := fields[a]; ok {
			t.Errorf("reject_goal fix_tasks items take %s", a)
		}
	}
	if req, _ := items["required"].([]any); !slices.Equal(req, []any{"title"}) {
		t.Errorf("reject_goal fix task required %v, want [title]", req)
	}
}

// TestThreeAgentWorkflow is the simple three-agent workflow of
// goal-verification-system.md, through MCP only, with the refusals along the way.
func TestThreeAgentWorkflow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		goal, id := workflowGoalAndTask(t, e)
		workflowBuildAndApprove(t, e, goal, id)
		workflowVerifyTask(t, e, id)
		workflowVerifyGoal(t, e, goal, id)
	})
}

// workflowGoalAndTask is steps 1 and 2: the lead creates the goal and the task,
// assigned to a and linked.
func workflowGoalAndTask(t *testing.T, e *env) (goal, id int64) {
	t.Helper()
	// 1. Lead creates the goal.
	g := e.ok("c", "create_goal", map[string]any{"creator": "c", "title": "Build login page", "description": "Users sign in", "project": "house-wire"})
	if g.str("state") != "open" || g.str("creator") != "c" || g.id() == 0 {
		t.Fatalf("goal %v", g)
	}
	goal = g.id()
	// Identity is the token's: C cannot create a goal as A.
	e.refused("c", "create_goal", map[string]any{"creator": "a", "title": "Spoofed"}, mcp.RuleAgentIsTokenOwner, `"c"`)

	// 2. Lead creates and assigns the task, then links it.
	id = e.createTask("c", "Create login form component", "a", 0)
	linked := e.ok("c", "link_task_to_goal", map[string]any{"task_id": id, "goal_id": goal})
	if gid, _ := linked["goal_id"].(float64); int64(gid) != goal {
		t.Fatalf("linked %v", linked)
	}
	// Only a lead or exec assigns someone else.
	e.refused("a", "create_task", map[string]any{"title": "Sneaky", "assign_to": "b"}, "lead_or_exec")
	e.refused("c", "create_task", map[string]any{"title": "Nobody", "assign_to": "zed"}, "assignee", "no agent named")
	return goal, id
}

// workflowBuildAndApprove is steps 3 and 4: a builds and submits, c approves.
func workflowBuildAndApprove(t *testing.T, e *env, goal, id int64) {
	t.Helper()
	// 3. Builder A starts and submits. Only the assignee starts.
	e.refused("b", "update_task", map[string]any{"task_id": id, "status": "in_progress"}, "assignee_only")
	e.start(id)
	if s := e.goalStatus(goal).sub("goal").str("state"); s != "active" {
		t.Fatalf("goal after start: %s", s)
	}
	// No tool posts a completion.
	msg := e.refused("a", "update_task", map[string]any{"agent_name": "a", "task_id": id, "status": "completed"}, mcp.RuleCompletionByRunner, "runner")
	if !strings.Contains(msg, "no tool posts a completion") {
		t.Fatalf("completion refusal: %s", msg)
	}
	e.refused("a", "update_task", map[string]any{"task_id": id, "status": "verified"}, mcp.RuleCompletionByRunner)
	e.refused("a", "update_task", map[string]any{"task_id": id, "status": "done"}, "status", "in_progress, review or cancelled")
	e.refused("b", "submit_for_review", map[string]any{"task_id": id, "summary": "not mine"}, "builder_only")
	// Approving before review: the current state and what the caller may take from
	// it — the lead may cancel, only the builder may submit.
	if msg := e.refused("c", "approve_task", map[string]any{"task_id": id}, "current state: in_progress",
		"allowed now: cancel (update_task status=cancelled)"); strings.Contains(msg, "submit") {
		t.Fatalf("the lead is offered the builder's submit: %s", msg)
	}
	e.refused("a", "approve_task", map[string]any{"agent_name": "a", "task_id": id}, "current state: in_progress", "allowed now: submit (submit_for_review)")
	e.state(id, "review", e.ok("a", "submit_for_review", map[string]any{"agent_name": "a", "task_id": id,
		"summary": "Built form with validation", "files_changed": "login.js, login.css"}))

	// 4. With three agents the builder cannot approve; lead C approves.
	e.refused("a", "approve_task", map[string]any{"agent_name": "a", "task_id": id}, "approver_not_builder")
	done := e.ok("c", "approve_task", map[string]any{"agent_name": "c", "task_id": id})
	e.state(id, "completed", done)
	if done.str("approver") != "c" || done.str("builder") != "a" || done.str("files_changed") != "login.js, login.css" {
		t.Fatalf("approved task %v", done)
	}
}

// workflowVerifyTask is step 5: b verifies the task, the builder and the approver may
// not.
func workflowVerifyTask(t *testing.T, e *env, id int64) {
	t.Helper()
	// 5. Verification: not the builder, not the approver, not in someone else's name.
	e.refused("a", "verify_task", map[string]any{"agent_name": "a", "task_id": id, "notes": "I checked my own work"}, "verifier_not_builder")
	e.refused("c", "verify_task", map[string]any{"agent_name": "c", "task_id": id, "notes": "ok"}, "verifier_not_approver")
	e.refused("b", "verify_task", map[string]any{"agent_name": "c", "task_id": id, "notes": "ok"}, mcp.RuleAgentIsTokenOwner)
	e.refused("a", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "ok"}, mcp.RuleAgentIsTokenOwner)
	v := e.ok("b", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "Form renders correctly, validation works"})
	e.state(id, "verified", v)
	if v.str("verifier") != "b" || v.str("notes") != "Form renders correctly, validation works" {
		t.Fatalf("verified task %v", v)
	}
	// Verified: only a lead may reopen it, so the verifier may take nothing.
	e.refused("b", "verify_task", map[string]any{"task_id": id}, "current state: verified", "allowed now: nothing")
	e.refused("c", "verify_task", map[string]any{"task_id": id}, "current state: verified", "allowed now: reopen (reopen_task)")
}

// workflowVerifyGoal is steps 6 and 7: the goal waits for the lead, who verifies it;
// two ledger entries result.
func workflowVerifyGoal(t *testing.T, e *env, goal, id int64) {
	t.Helper()
	// 6. All tasks verified: the goal waits for the lead.
	st := e.goalStatus(goal)
	if st.sub("goal").str("state") != "pending_verify" || st.num("total") != 1 {
		t.Fatalf("goal status %v", st)
	}
	counts := st.sub("counts")
	for _, s := range models.TaskStates {
		want := 0
		if s == models.TaskVerified {
			want = 1
		}
		if _, ok := counts[string(s)]; !ok || counts.num(string(s)) != want {
			t.Fatalf("counts %v: %s", counts, s)
		}
	}
	tasks := st.list("tasks")
	if len(tasks) != 1 || tasks[0].id() != id || tasks[0].str("title") != "Create login form component" ||
		tasks[0].str("state") != "verified" || tasks[0].str("role") != "developer" || tasks[0].str("assignee") != "a" {
		t.Fatalf("tasks %v", tasks)
	}

	// 7. Only the lead verifies the goal, with notes, as themself.
	e.refused("b", "verify_goal", map[string]any{"agent_name": "b", "goal_id": goal, "notes": "Looks fine"}, "lead_only")
	e.refused("b", "verify_goal", map[string]any{"agent_name": "c", "goal_id": goal, "notes": "Looks fine"}, mcp.RuleAgentIsTokenOwner)
	e.refused("c", "verify_goal", map[string]any{"agent_name": "c", "goal_id": goal, "notes": "  "}, "notes", "must not be empty")
	gv := e.ok("c", "verify_goal", map[string]any{"agent_name": "c", "goal_id": goal, "notes": "Login flow works end-to-end"})
	if gv.str("state") != "verified" || gv.str("verifier") != "c" {
		t.Fatalf("verified goal %v", gv)
	}
	e.refused("c", "verify_goal", map[string]any{"goal_id": goal, "notes": "again"}, "current state: verified")

	// The verified task and the verified goal each left one ledger entry.
	entries, err := e.db.ListLedger(context.Background(), models.LedgerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Type != models.LedgerTaskComplete || entries[1].Type != models.LedgerGoalVerified {
		t.Fatalf("ledger entries %+v", entries)
	}
}

// TestRejectionFlow is the rejection flow of goal-verification-system.md, with the
// reviewer's rejection and the two-rejection escalation to the lead's inbox.
func TestRejectionFlow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		id := e.createTask("c", "Login form", "a", 0)
		e.start(id)
		e.submitAndApprove(id)

		// A rejection needs a reason.
		e.refused("b", "reject_verification", map[string]any{"agent_name": "b", "task_id": id, "reason": ""}, "reason", "must not be empty")
		e.refused("b", "reject_verification", map[string]any{"agent_name": "b", "task_id": id, "reason": "   "}, "reason")
		e.refused("b", "reject_verification", map[string]any{"agent_name": "b", "task_id": id}, "reason")
		e.refused("a", "reject_verification", map[string]any{"task_id": id, "reason": "I changed my mind"}, "verifier_not_builder")

		// 2. Checker B finds a bug: back to in_progress with the builder and the reason.
		reason := "Form doesn't validate email format - accepts 'abc' as valid email"
		r := e.ok("b", "reject_verification", map[string]any{"agent_name": "b", "task_id": id, "reason": reason})
		e.state(id, "in_progress", r)
		if r.str("reason") != reason || r.str("assignee") != "a" || r.num("rejections") != 1 {
			t.Fatalf("rejected task %v", r)
		}
		if entries, _ := e.db.ListLedger(context.Background(), models.LedgerFilter{}); len(entries) != 0 {
			t.Fatalf("a rejected task reached the ledger: %+v", entries)
		}

		// 3-4. A fixes and re-submits (and reads the reason there); the reviewer rejects once too.
		sub := e.ok("a", "submit_for_review", map[string]any{"agent_name": "a", "task_id": id, "summary": "Email validated"})
		if sub.str("reason") != reason {
			t.Fatalf("builder does not see the reason: %v", sub)
		}
		e.refused("c", "reject_task", map[string]any{"agent_name": "c", "task_id": id, "reason": ""}, "reason")
		e.state(id, "in_progress", e.ok("c", "reject_task", map[string]any{"agent_name": "c", "task_id": id, "reason": "Add a test for 'abc'"}))
		e.submitAndApprove(id)

		// Two-rejection escalation: the second verifier rejection reaches the lead's inbox.
		if items := e.ok("c", "inbox_list", map[string]any{"kind": "escalation"}).list("items"); len(items) != 0 {
			t.Fatalf("escalated too early: %v", items)
		}
		e.ok("b", "reject_verification", map[string]any{"agent_name": "b", "task_id": id, "reason": "Still accepts 'a@b'"})
		items := e.ok("c", "inbox_list", map[string]any{"kind": "escalation"}).list("items")
		if len(items) != 1 || int64(items[0].num("task_id")) != id || !strings.Contains(items[0].str("title"), "rejected twice") {
			t.Fatalf("escalation %v", items)
		}
		e.refused("c", "inbox_list", map[string]any{"kind": "everything"}, "kind", "must be one of blocked, escalation, advisory, agent_paused, budget, drift, question")

		// 5. Fixed again, re-approved, verified.
		e.submitAndApprove(id)
		v := e.ok("b", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "Email validation now correct"})
		e.state(id, "verified", v)
	})
}

// TestGoalConfirmationFlow is the goal confirmation flow of goal-verification-system.md:
// the lead sends a goal back with a fix task, verified tasks stay verified, and the goal
// is verified once the fix is; then a regression reopens a task and the goal.
func TestGoalConfirmationFlow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		goal := e.ok("c", "create_goal", map[string]any{"title": "Login and dashboard"}).id()
		var ids []int64
		for _, title := range []string{"Login form", "Dashboard", "Session handling"} {
			id := e.createTask("c", title, "a", goal)
			e.fullCycle(id)
			ids = append(ids, id)
		}
		// 1. All three verified: pending_verify.
		st := e.goalStatus(goal)
		if st.sub("goal").str("state") != "pending_verify" || st.sub("counts").num("verified") != 3 {
			t.Fatalf("goal status %v", st)
		}

		// 3. The lead finds an integration bug and sends the goal back with a fix task.
		fix := e.ok("c", "create_task", map[string]any{"creator": "c", "title": "Fix CSS conflicts between login and dashboard", "assign_to": "a"}).id()
		e.ok("c", "link_task_to_goal", map[string]any{"task_id": fix, "goal_id": goal})
		st = e.goalStatus(goal)
		counts := st.sub("counts")
		if st.sub("goal").str("state") != "active" || counts.num("verified") != 3 || counts.num("assigned") != 1 || st.num("total") != 4 {
			t.Fatalf("after the fix task: %v", st)
		}
		e.refused("c", "verify_goal", map[string]any{"goal_id": goal, "notes": "too early"}, "current state: active")

		// 4. The fix goes through the full cycle; 5. the lead re-tests and verifies.
		e.fullCycle(fix)
		if s := e.goalStatus(goal).sub("goal").str("state"); s != "pending_verify" {
			t.Fatalf("goal after fix: %s", s)
		}
		e.ok("c", "verify_goal", map[string]any{"agent_name": "c", "goal_id": goal, "notes": "Login and dashboard work together"})
		if s := e.goalStatus(goal).sub("goal").str("state"); s != "verified" {
			t.Fatalf("goal %s", s)
		}
		e.refused("c", "link_task_to_goal", map[string]any{"task_id": fix, "goal_id": goal}, "goal is verified")

		// Regression after confirmation: only the lead reopens, with a reason; the
		// builder gets the task back and the goal is active again.
		e.refused("b", "reopen_task", map[string]any{"task_id": ids[0], "reason": "Broke"}, "lead_only")
		e.refused("c", "reopen_task", map[string]any{"task_id": ids[0]}, "reason")
		r := e.ok("c", "reopen_task", map[string]any{"agent_name": "c", "task_id": ids[0], "reason": "Login broke after the dashboard change"})
		e.state(ids[0], "in_progress", r)
		if r.str("assignee") != "a" || r.str("verifier") != "" {
			t.Fatalf("reopened %v", r)
		}
		if s := e.goalStatus(goal).sub("goal").str("state"); s != "active" {
			t.Fatalf("goal after reopen: %s", s)
		}
	})
}

// TestArgumentsAreToolErrors: malformed arguments are tool errors the agent can read,
// not protocol errors.
func TestArgumentsAreToolErrors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("a", "developer")
		e.refused("a", "goal_status", map[string]any{"goal_id": "GOAL-1"}, "goal_id")
		e.refused("a", "goal_status", map[string]any{"goal_id": 999}, "not found")
		e.refused("a", "create_goal", map[string]any{"title": ""}, "title", "is required")
		e.refused("a", "create_goal", map[string]any{"title": "x", "owner": "a"}, "owner")
		e.refused("a", "update_task", map[string]any{"task_id": 1, "status": "blocked"}, "status", "runner")
	})
}

// TestAuthentication: no token or a bad token is 401 before any MCP is spoken, and the
// agent is resolved on every request: a disabled agent's open client is refused at once.
func TestAuthentication(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("a", "developer")
		e.agent("b", "tester")
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		for name, header := range map[string]string{"none": "", "bad": "Bearer cs_not-a-token", "basic": "Basic YTpi", "other agent's hash": "Bearer " + models.HashSecret(e.tokens["a"])} {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s: status %d, WWW-Authenticate %q", name, res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		}
		// Behind a reverse proxy on the same host the Host header is the public name.
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(body))
		req.Host = "countersign.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.tokens["a"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("proxied request: status %d", res.StatusCode)
		}
		// Stateless: no event stream to GET; the transport answers, not the API's 404.
		req, _ = http.NewRequest(http.MethodGet, e.srv.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.tokens["a"])
		if res, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET /mcp: status %d", res.StatusCode)
		}
		if _, err := e.connect("cs_not-a-token", ""); err == nil {
			t.Fatal("the SDK client connected with a bad token")
		}

		// Two clients, two agents: each call acts as its own token's agent.
		ga := e.ok("a", "create_goal", map[string]any{"title": "A's goal"})
		gb := e.ok("b", "create_goal", map[string]any{"title": "B's goal"})
		if ga.str("creator") != "a" || gb.str("creator") != "b" {
			t.Fatalf("creators %q %q", ga.str("creator"), gb.str("creator"))
		}

		// Disabling B takes effect on B's next request, on the client already connected.
		ctx := context.Background()
		b, err := e.svc.Store().GetAgentByName(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		b.Disabled = true
		if err := e.svc.Agents.UpdateAgent(ctx, models.System, b); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := e.clients["b"].CallTool(cctx, &sdk.CallToolParams{Name: "goal_status", Arguments: map[string]any{"goal_id": gb.id()}}); err == nil {
			t.Fatal("a disabled agent's client was served")
		}
		e.ok("a", "goal_status", map[string]any{"goal_id": gb.id()})
	})
}
