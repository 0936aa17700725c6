package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// The held-out test every test here hides: its path and a marker in its content, each
// of which must never reach a reader who may not set held-out tests.
const (
	heldOutPath   = "calc_heldout_test.go"
	heldOutMarker = "HELDOUT_SECRET_Add_10_4"
)

func heldOutContent() string {
	return "package calc\n\nimport \"testing\"\n\nfunc TestBig(t *testing.T) {\n\tif Add(10, 4) != 14 {\n\t\tt.Fatal(\"" + heldOutMarker + "\")\n\t}\n}\n"
}

// heldOutContract is a task contract with one held-out test.
func heldOutContract() map[string]any {
	return map[string]any{
		"completion": map[string]any{"type": "none"},
		"verification": map[string]any{"type": "verifiable",
			"criteria": []any{map[string]any{"activity": "unit-test", "description": "the tests pass"}},
			"held_out": []any{map[string]any{"path": heldOutPath, "content": heldOutContent()}}},
	}
}

// hidesHeldOut fails unless raw (a response body) carries neither the held-out test's
// path nor its content, and names how many there are (wantCount of "held_out_count":1).
func hidesHeldOut(t *testing.T, who string, raw []byte, wantCount int) {
	t.Helper()
	s := string(raw)
	if strings.Contains(s, heldOutPath) || strings.Contains(s, heldOutMarker) {
		t.Fatalf("%s reads the held-out test: %s", who, raw)
	}
	if got := strings.Count(s, `"held_out_count":1`); got != wantCount {
		t.Fatalf("%s: held_out_count:1 appears %d times, want %d: %s", who, got, wantCount, raw)
	}
}

// showsHeldOut fails unless raw carries the held-out test's path and content.
func showsHeldOut(t *testing.T, who string, raw []byte) {
	t.Helper()
	if !strings.Contains(string(raw), `"path":"`+heldOutPath+`"`) || !strings.Contains(string(raw), heldOutMarker) {
		t.Fatalf("%s does not read the held-out test back: %s", who, raw)
	}
}

// TestHeldOutTestsAPI: a lead sets a held-out test through POST /tasks and reads it
// back; a worker's token, a tester's, an exec's and an attempt token (of a worker that
// holds the lead role: the scope alone hides it) read the task, the task list, the
// goal and the answers of their own actions without its path or content but with its
// count; a worker or tester that sends held_out is refused (403 commands_need_editor)
// and nothing is stored. The attempts come back with the judge's report.
func TestHeldOutTestsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.authorityTeam() // w1 (worker), tess (tester), eddie (editor), lena (lead)
		e.agent("xena", models.KindHuman, models.RoleExec)
		bot := e.agent("bot", models.KindWorker, "developer", models.RoleLead)
		ctx := context.Background()

		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "Calculator"})
		goal := g.num("id")
		created := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Make Add add", "role": "developer",
			"goal_id": goal, "assignee": "bot", "contract": heldOutContract()})
		showsHeldOut(t, "the lead creating it", created.Raw)
		id := created.num("id")
		if st := e.storedTask(id); len(st.Contract.Verification.HeldOut) != 1 || st.Contract.Verification.HeldOut[0].Content != heldOutContent() {
			t.Fatalf("stored held-out tests %+v", st.Contract.Verification.HeldOut)
		}

		// A second task, assigned to the tester, for the answers of actions.
		human := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Check Add by hand", "role": "tester",
			"assignee": "tess", "contract": heldOutContract()}).num("id")

		// Those who may set them read them back: the lead and an editor.
		for _, who := range []string{"lena", "eddie"} {
			showsHeldOut(t, who, e.must(200, who, "GET", "/tasks/"+itoa(id), nil).Raw)
		}
		showsHeldOut(t, "lena listing", e.must(200, "lena", "GET", "/tasks", nil).Raw)
		showsHeldOut(t, "lena reading the goal", e.must(200, "lena", "GET", "/goals/"+itoa(goal), nil).Raw)

		// Everyone else, never: the task, the list, the goal.
		for _, who := range []string{"w1", "tess", "xena"} {
			hidesHeldOut(t, who+" reading the task", e.must(200, who, "GET", "/tasks/"+itoa(id), nil).Raw, 1)
			hidesHeldOut(t, who+" listing", e.must(200, who, "GET", "/tasks", nil).Raw, 2)
			hidesHeldOut(t, who+" reading the goal", e.must(200, who, "GET", "/goals/"+itoa(goal), nil).Raw, 1)
		}
		// The answers of actions: starting (the assignee), linking (an exec).
		hidesHeldOut(t, "tess starting her task", e.must(200, "tess", "POST", "/tasks/"+itoa(human)+"/start", nil).Raw, 1)
		hidesHeldOut(t, "xena linking it", e.must(200, "xena", "POST", "/tasks/"+itoa(human)+"/link", map[string]any{"goal_id": goal}).Raw, 1)

		// An attempt token: the bot holds the lead role, but acts for its attempt only.
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, id, 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens["attempt"] = secret
		hidesHeldOut(t, "the attempt token", e.must(200, "attempt", "GET", "/tasks/"+itoa(id), nil).Raw, 1)
		showsHeldOut(t, "the bot's own token (a lead)", e.must(200, "bot", "GET", "/tasks/"+itoa(id), nil).Raw)

		heldOutNeedsAuthority(t, e)
		heldOutJudgeReport(t, e, id, bot)
	})
}

// heldOutNeedsAuthority checks that setting held-out tests needs the authority to set
// commands, and that a refused task stores nothing.
func heldOutNeedsAuthority(t *testing.T, e *apiEnv) {
	t.Helper()
	// Setting held-out tests needs the authority to set commands; nothing is stored.
	for _, who := range []string{"w1", "tess"} {
		tasks, events := e.taskCount(), e.eventCount()
		r := e.do(who, "POST", "/tasks", map[string]any{"title": "Sneak a test in", "role": "developer", "contract": heldOutContract()})
		if r.Status != 403 || r.errRule() != models.RuleCommandsNeedEditor {
			t.Fatalf("%s sending held_out: %d %s", who, r.Status, r.Raw)
		}
		if e.taskCount() != tasks || e.eventCount() != events {
			t.Fatalf("%s: a refused task stored something", who)
		}
	}
}

// heldOutJudgeReport checks that the judge's report comes back with the attempt, to
// every reader, and which held-out tests failed only to those who may read them.
func heldOutJudgeReport(t *testing.T, e *apiEnv, id int64, bot *models.Agent) {
	t.Helper()
	ctx := context.Background()
	// The judge's report comes back with the attempt, to every reader.
	runner, err := e.svc.Agents.RunnerAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Tasks.TaskAction(ctx, runner, id, models.ActStart, models.ActionInput{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := e.db.CreateAttempt(ctx, &models.Attempt{TaskID: id, Number: 1, AgentID: bot.ID, RunnerID: "r1",
		Outcome: models.OutcomeFailed, Stage: models.StageTamper, Diagnosis: "the restored tests failed", StartedAt: now, FinishedAt: &now,
		Judge: &models.JudgeReport{Base: "0123456789abcdef", Restored: true,
			Protected: []models.ProtectedChange{{Path: "calc_test.go", Change: models.ChangeChanged, Diff: "-\twant 14\n+\twant 6\n"}},
			Floor:     &models.TestFloor{AtBase: 3, Run: 2, Passed: 2, Missing: 1, NotRun: []string{"TestSub"}},
			HeldOut: &models.HeldOutReport{Files: 1, FailedCount: 1, Failed: []string{"TestBig: Add(10, 4) = 6, want 14"},
				Detail: "--- FAIL: TestBig\n    " + heldOutPath + ":7: " + heldOutMarker}}}); err != nil {
		t.Fatal(err)
	}
	r := e.must(200, "w1", "GET", "/tasks/"+itoa(id), nil)
	var detail struct {
		Attempts []models.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal(r.Raw, &detail); err != nil {
		t.Fatal(err)
	}
	if len(detail.Attempts) != 1 || detail.Attempts[0].Judge == nil {
		t.Fatalf("attempts without the judge's report: %s", r.Raw)
	}
	j := detail.Attempts[0].Judge
	if detail.Attempts[0].Stage != models.StageTamper || len(j.Protected) != 1 || j.Protected[0].Path != "calc_test.go" ||
		j.Floor == nil || j.Floor.Missing != 1 || j.HeldOut == nil || j.HeldOut.Files != 1 || j.HeldOut.FailedCount != 1 {
		t.Fatalf("judge's report %+v", j)
	}
	// How many held-out tests failed, to everyone; which, how and with what
	// output, only to those who may read held-out tests.
	hidesHeldOut(t, "w1 reading the attempts", r.Raw, 1)
	for _, who := range []string{"w1", "attempt", "tess"} {
		raw := string(e.must(200, who, "GET", "/tasks/"+itoa(id), nil).Raw)
		if strings.Contains(raw, "TestBig") || strings.Contains(raw, "Add(10, 4)") || strings.Contains(raw, `"detail"`) {
			t.Fatalf("%s reads which held-out test failed: %s", who, raw)
		}
	}
	for _, who := range []string{"lena", "eddie"} {
		raw := string(e.must(200, who, "GET", "/tasks/"+itoa(id), nil).Raw)
		if !strings.Contains(raw, "TestBig: Add(10, 4) = 6, want 14") || !strings.Contains(raw, heldOutPath+":7: "+heldOutMarker) {
			t.Fatalf("%s does not read which held-out test failed: %s", who, raw)
		}
	}
}

// TestHeldOutTestsInTemplates: a template step's held-out tests are read back by an
// editor (JSON and YAML) and by no one else: a tester reads the template, the list and
// the YAML with the count (JSON) or a comment (YAML) instead, and the events API gives
// him the template changes without their diffs, which hold both versions' YAML.
func TestHeldOutTestsInTemplates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.authorityTeam()
		step := map[string]any{"role": "developer", "brief": "Make Add add", "completion": map[string]any{"type": "none"},
			"verification": heldOutContract()["verification"]}
		e.must(201, "eddie", "POST", "/templates", map[string]any{"name": "calc", "steps": []any{step}})
		step["brief"] = "Make Add add, carefully"
		e.must(201, "eddie", "POST", "/templates", map[string]any{"name": "calc", "steps": []any{step}})

		showsHeldOut(t, "the editor", e.must(200, "eddie", "GET", "/templates/calc", nil).Raw)
		showsHeldOut(t, "the lead listing", e.must(200, "lena", "GET", "/templates", nil).Raw)
		y := e.must(200, "eddie", "GET", "/templates/calc?format=yaml", nil)
		if !strings.Contains(string(y.Raw), heldOutPath) || !strings.Contains(string(y.Raw), heldOutMarker) {
			t.Fatalf("the editor's YAML lacks the held-out test: %s", y.Raw)
		}

		for _, who := range []string{"tess", "w1"} {
			hidesHeldOut(t, who+" reading the template", e.must(200, who, "GET", "/templates/calc", nil).Raw, 1)
			hidesHeldOut(t, who+" reading version 1", e.must(200, who, "GET", "/templates/calc?version=1", nil).Raw, 1)
			hidesHeldOut(t, who+" listing", e.must(200, who, "GET", "/templates", nil).Raw, 1)
			y := e.must(200, who, "GET", "/templates/calc?format=yaml", nil)
			hidesHeldOut(t, who+" reading the YAML", y.Raw, 0)
			if !strings.Contains(string(y.Raw), "# steps[0] has 1 held-out test(s), hidden") {
				t.Fatalf("%s's YAML does not say a test is held out: %s", who, y.Raw)
			}
		}

		// The events: the editor reads the diffs, with the held-out test's path and
		// digest in them (so the check below could see one) but never its content,
		// which the stored event does not hold; the tester reads the changes without them.
		if d := eventsDiffs(t, e, "eddie"); !strings.Contains(d, heldOutPath) || !strings.Contains(d, "(held out, sha256 ") || strings.Contains(d, heldOutMarker) {
			t.Fatalf("the editor's template history lacks the held-out test's path and digest, or holds its content: %s", d)
		}
		tess := eventsDiffs(t, e, "tess")
		if strings.Contains(tess, heldOutPath) || strings.Contains(tess, heldOutMarker) {
			t.Fatalf("the tester reads the held-out test in the template's history: %s", tess)
		}
		raw := e.must(200, "tess", "GET", "/events", nil).Raw
		if strings.Contains(string(raw), heldOutMarker) || strings.Count(string(raw), `"diff_hidden"`) != 2 {
			t.Fatalf("the tester's events: %s", raw)
		}
	})
}

// eventsDiffs returns the diffs of the template.changed events as who reads them.
func eventsDiffs(t *testing.T, e *apiEnv, who string) string {
	t.Helper()
	r := e.must(200, who, "GET", "/events", nil)
	var out struct {
		Events []models.Event `json:"events"`
	}
	if err := json.Unmarshal(r.Raw, &out); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for _, ev := range out.Events {
		if ev.Type != models.EventTemplateChanged {
			continue
		}
		var ch models.Change
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			t.Fatal(err)
		}
		diffs = append(diffs, ch.Diff)
	}
	if len(diffs) != 2 {
		t.Fatalf("%s reads %d template changes, want 2", who, len(diffs))
	}
	return strings.Join(diffs, "\n")
}
