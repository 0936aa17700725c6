package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// setClock makes the service's clock a function of the test's.
func (e *apiEnv) clock(now *time.Time) { e.svc.SetClock(func() time.Time { return *now }) }

// TestTokensAPI: an admin or the agent itself lists an agent's tokens (never a secret
// or a hash) and revokes them; a revoked or expired token is 401 from then on.
func TestTokensAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, models.RoleAdmin)
		e.agent("lee", models.KindHuman, models.RoleLead)
		e.agent("bot", models.KindWorker, "developer")
		now := time.Now().UTC()
		e.clock(&now)
		ctx := context.Background()
		short, shortTok, err := e.svc.Tokens.IssueToken(ctx, models.System, "lee", "short", time.Hour)
		if err != nil {
			t.Fatal(err)
		}

		r := e.must(200, "ada", "GET", "/agents/lee/tokens", nil)
		if strings.Contains(string(r.Raw), `"hash"`) || strings.Contains(string(r.Raw), "cs_") {
			t.Fatalf("token list shows a secret or hash: %s", r.Raw)
		}
		var list struct {
			Tokens []struct {
				ID        int64
				Name      string
				Status    string
				ExpiresAt *time.Time `json:"expires_at"`
			}
		}
		if err := json.Unmarshal(r.Raw, &list); err != nil || len(list.Tokens) != 2 || list.Tokens[0].Name != "short" || list.Tokens[1].Status != "active" {
			t.Fatalf("tokens of lee: %s", r.Raw)
		}
		if exp := list.Tokens[1].ExpiresAt; exp == nil || exp.Sub(now) < 89*24*time.Hour {
			t.Fatalf("a token created without --expires expires at %v, want in 90 days", exp)
		}
		e.must(200, "lee", "GET", "/agents/lee/tokens", nil)
		if r := e.do("bot", "GET", "/agents/lee/tokens", nil); r.Status != 403 || r.errRule() != "admin_or_owner" {
			t.Fatalf("a worker lists the lead's tokens: %d %s", r.Status, r.Raw)
		}
		e.must(404, "ada", "GET", "/agents/nobody/tokens", nil)

		// Expiry: the short token works until its hour is over.
		e.tokens["lee-short"] = short
		e.must(200, "lee-short", "GET", "/goals", nil)
		now = now.Add(time.Hour)
		if r := e.do("lee-short", "GET", "/goals", nil); r.Status != 401 || !strings.Contains(r.errField("message"), "expired") {
			t.Fatalf("an expired token: %d %s", r.Status, r.Raw)
		}

		// Revocation: by another agent refused; by the owner, at once.
		leeTok := list.Tokens[1].ID
		before := e.eventCount()
		if r := e.do("bot", "DELETE", "/tokens/"+itoa(leeTok), nil); r.Status != 403 {
			t.Fatalf("a worker revokes the lead's token: %d %s", r.Status, r.Raw)
		}
		if e.eventCount() != before {
			t.Fatal("a refused revocation wrote an event")
		}
		r = e.must(200, "lee", "DELETE", "/tokens/"+itoa(leeTok), nil)
		if r.str("status") != "revoked" || r.str("revoked_at") == "" {
			t.Fatalf("revoked token: %s", r.Raw)
		}
		if r := e.do("lee", "GET", "/goals", nil); r.Status != 401 || !strings.Contains(r.errField("message"), "revoked") {
			t.Fatalf("a revoked token: %d %s", r.Status, r.Raw)
		}
		e.must(200, "ada", "DELETE", "/tokens/"+itoa(shortTok.ID), nil)
		e.must(404, "ada", "DELETE", "/tokens/424242", nil)
	})
}

// TestBodyTooLarge: a body over the limit is 413 with the usual error body, whether
// the Content-Length announces it or it turns out while the JSON is decoded.
func TestBodyTooLarge(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lee", models.KindHuman, models.RoleLead)
		big := `{"title":"x","brief":"` + strings.Repeat("a", 11<<20) + `"}`
		for name, chunked := range map[string]bool{"announced": false, "chunked": true} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = struct{ io.Reader }{body} // no length: sent chunked, cut off while read
			}
			req, err := http.NewRequest("POST", e.srv.URL+"/api/v1/tasks", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.tokens["lee"])
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var out struct{ Error models.Error }
			_ = json.Unmarshal(raw, &out)
			if res.StatusCode != 413 || out.Error.Code != models.ETOOLARGE || !strings.Contains(out.Error.Message, "2 MiB") {
				t.Fatalf("%s 11 MB body: %d %s", name, res.StatusCode, raw)
			}
		}
		// Under the limit, the same request is read and judged on its fields.
		if r := e.do("lee", "POST", "/tasks", `{"title":"`+strings.Repeat("a", 1<<20)+`"}`); r.Status != 422 {
			t.Fatalf("a 1 MiB body: %d %s", r.Status, r.Raw)
		}
	})
}

// TestMetricsNeedToken: /metrics answers a valid agent token only, unless the server
// runs with MetricsPublic; an attempt token is out of its scope.
func TestMetricsNeedToken(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db, svc := handlertest.Open(t, dialect)
		handlertest.CreateAgent(t, svc, "prom", models.KindHuman, "", "metrics")
		bot := handlertest.CreateAgent(t, svc, "bot", models.KindWorker, "", "developer")
		tok := handlertest.CreateToken(t, svc, "prom", "scrape")
		task, err := svc.Tasks.CreateTask(context.Background(), models.System, models.TaskSpec{Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		attempt, _, err := svc.Tokens.IssueAttemptToken(context.Background(), bot.ID, task.ID, 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		m := handlers.NewMetrics(db, nil)
		for _, public := range []bool{false, true} {
			_, srv := handlertest.Serve(t, handlers.Deps{Service: svc, Metrics: m.Handler(), MetricsPublic: public})
			want := map[string]int{"": 401, "cs_wrong": 401, tok: 200, attempt: 403}
			if public {
				want = map[string]int{"": 200, tok: 200}
			}
			for token, status := range want {
				got, raw := handlertest.Request(t, "GET", srv.URL+"/metrics", token, "", nil)
				if got != status {
					t.Fatalf("public=%v, token %.6q: /metrics %d, want %d: %.200s", public, token, got, status, raw)
				}
				if status == 200 && !strings.Contains(string(raw), "countersign_tasks") {
					t.Fatalf("/metrics: %.200s", raw)
				}
			}
		}
	})
}

// TestAgentCommandsForAdminsOnly: GET /agents shows commands, workdirs and sandboxes
// to admins; a worker or a lead sees neither, nor the command in the events feed.
func TestAgentCommandsForAdminsOnly(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, models.RoleAdmin)
		e.agent("lee", models.KindHuman, models.RoleLead)
		e.agent("bot", models.KindWorker, "developer")
		e.must(201, "ada", "POST", "/agents", map[string]any{"name": "quinn", "kind": "worker", "roles": []string{"developer"},
			"command": "secret-wrapper --key-file /etc/quinn.key", "workdir": "/srv/checkout",
			"sandbox": map[string]any{"write": []string{"/srv/cache"}, "connect": []int{5432}}})
		e.must(200, "ada", "PATCH", "/agents/quinn", map[string]any{"command": "secret-wrapper --key-file /etc/quinn2.key"})
		for _, who := range []string{"bot", "lee"} {
			for _, path := range []string{"/agents", "/events?limit=1000"} {
				r := e.must(200, who, "GET", path, nil)
				for _, leak := range []string{"secret-wrapper", "/srv/checkout", "/srv/cache", "[5432]", `"command":"true"`} {
					if strings.Contains(string(r.Raw), leak) {
						t.Fatalf("%s sees %q in GET %s: %s", who, leak, path, r.Raw)
					}
				}
			}
			r := e.must(200, who, "GET", "/agents", nil)
			if !strings.Contains(string(r.Raw), `"name":"quinn"`) {
				t.Fatalf("%s does not see the agent quinn at all: %s", who, r.Raw)
			}
		}
		r := e.must(200, "ada", "GET", "/agents", nil)
		for _, want := range []string{"secret-wrapper --key-file /etc/quinn2.key", "/srv/checkout", `"sandbox":{"write":["/srv/cache"],"connect":[5432]}`} {
			if !strings.Contains(string(r.Raw), want) {
				t.Fatalf("the admin does not see %q: %s", want, r.Raw)
			}
		}
		r = e.must(200, "ada", "GET", "/events?limit=1000", nil)
		if !strings.Contains(string(r.Raw), "quinn2.key") {
			t.Fatalf("the admin does not see the command change in the events: %s", r.Raw)
		}
	})
}

// TestAgentPatch: an admin changes an agent's sandbox and command through PATCH
// /agents/{name}, each change an agent.changed event; nobody else may.
func TestAgentPatch(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, models.RoleAdmin)
		e.agent("lee", models.KindHuman, models.RoleLead)
		e.agent("bot", models.KindWorker, "developer")
		before := e.eventCount()
		for _, who := range []string{"lee", "bot"} {
			if r := e.do(who, "PATCH", "/agents/bot", map[string]any{"sandbox": map[string]any{"write": []string{"/"}}}); r.Status != 403 || r.errRule() != "admin_only" {
				t.Fatalf("%s patches a sandbox: %d %s", who, r.Status, r.Raw)
			}
		}
		r := e.do("ada", "PATCH", "/agents/bot", map[string]any{"sandbox": map[string]any{"write": []string{"/", "rel"}, "connect": []int{0}}})
		if r.Status != 422 || r.fields()["sandbox.write"] == nil || r.fields()["sandbox.connect"] == nil {
			t.Fatalf("a bad sandbox: %d %s", r.Status, r.Raw)
		}
		if r := e.do("ada", "PATCH", "/agents/lee", map[string]any{"sandbox": map[string]any{"allow_unix": true}}); r.Status != 422 || r.fields()["sandbox"] == nil {
			t.Fatalf("a human's sandbox: %d %s", r.Status, r.Raw)
		}
		if e.eventCount() != before {
			t.Fatal("refused changes wrote events")
		}
		r = e.must(200, "ada", "PATCH", "/agents/bot", map[string]any{"sandbox": map[string]any{"read": []string{"/opt/sdk/"}, "write": []string{"/srv/cache"}, "connect": []int{443}, "allow_unix": true}})
		sb, _ := r.Body["sandbox"].(map[string]any)
		if sb == nil || sb["allow_unix"] != true || r.str("command") != "true" {
			t.Fatalf("patched agent: %s", r.Raw)
		}
		evs := handlertest.Events(t, e.db)
		last := evs[len(evs)-1]
		if last.Type != models.AgentChangedEvent || !strings.Contains(string(last.Data), `"sandbox.read":{"before":[],"after":["/opt/sdk"]}`) {
			t.Fatalf("last event %s %s", last.Type, last.Data)
		}
		e.must(404, "ada", "PATCH", "/agents/runner", map[string]any{"roles": []string{"lead"}})
	})
}

// TestAttemptTokenAPI: an attempt token reads (but does not submit) its own task and creates
// tasks; any other task or endpoint is 403 attempt_token_scope; revoked or expired it
// is 401.
func TestAttemptTokenAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lee", models.KindHuman, models.RoleLead, models.RoleExec)
		bot := e.agent("bot", models.KindWorker, "developer", models.RoleLead)
		ctx := context.Background()
		now := time.Now().UTC()
		e.clock(&now)
		mk := func(title string) int64 {
			r := e.must(201, "lee", "POST", "/tasks", map[string]any{"title": title, "assignee": "bot",
				"contract": map[string]any{"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "skip"}}})
			id := r.num("id")
			runner, err := e.svc.Agents.RunnerAgent(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Tasks.TaskAction(ctx, runner, id, models.ActStart, models.ActionInput{}); err != nil {
				t.Fatal(err)
			}
			return id
		}
		own, other := mk("own"), mk("other")
		secret, tokID, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, own, 1, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens["attempt"] = secret

		e.must(200, "attempt", "GET", "/tasks/"+itoa(own), nil)
		before := e.eventCount()
		reason := map[string]any{"reason": "r"}
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/tasks/" + itoa(other), nil},
			{"POST", "/tasks/" + itoa(other) + "/submit", map[string]any{"summary": "s"}},
			{"POST", "/tasks/" + itoa(other) + "/cancel", reason},
			{"POST", "/tasks/" + itoa(own) + "/cancel", reason},
			{"POST", "/tasks/" + itoa(own) + "/approve", nil},
			{"POST", "/tasks/" + itoa(own) + "/link", map[string]any{"goal_id": 1}},
			{"GET", "/tasks", nil},
			{"GET", "/goals", nil},
			{"POST", "/goals", map[string]any{"title": "t"}},
			{"GET", "/events", nil},
			{"GET", "/inbox", nil},
			{"GET", "/agents", nil},
			{"GET", "/agents/bot/tokens", nil},
			{"DELETE", "/tokens/" + itoa(tokID), nil},
			{"PUT", "/rules", map[string]any{}},
		} {
			r := e.do("attempt", c.method, c.path, c.body)
			if r.Status != 403 || r.errRule() != models.RuleAttemptTokenScope {
				t.Errorf("%s %s with an attempt token: %d %s", c.method, c.path, r.Status, r.Raw)
			}
		}
		if e.eventCount() != before {
			t.Fatal("refused requests wrote events")
		}
		r := e.must(201, "attempt", "POST", "/tasks", map[string]any{"title": "a sub-task"})
		if r.num("parent_task_id") != own {
			t.Fatalf("a task created with an attempt token: %s", r.Raw)
		}
		child := r.num("id")
		e.must(200, "attempt", "GET", "/tasks/"+itoa(child), nil)
		e.must(403, "attempt", "POST", "/tasks/"+itoa(own)+"/submit", map[string]any{"summary": "done"}) // the runner submits it

		now = now.Add(30 * time.Minute)
		if r := e.do("attempt", "GET", "/tasks/"+itoa(own), nil); r.Status != 401 {
			t.Fatalf("an expired attempt token: %d %s", r.Status, r.Raw)
		}
		now = now.Add(-30 * time.Minute)
		e.must(200, "attempt", "GET", "/tasks/"+itoa(own), nil)
		if err := e.svc.Tokens.RevokeAttemptToken(ctx, tokID); err != nil {
			t.Fatal(err)
		}
		if r := e.do("attempt", "GET", "/tasks/"+itoa(own), nil); r.Status != 401 {
			t.Fatalf("a revoked attempt token: %d %s", r.Status, r.Raw)
		}
	})
}
