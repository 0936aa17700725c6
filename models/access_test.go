package models_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// accessEnv is a service over a fresh store whose clock the test moves, with an admin,
// a lead and a worker.
type accessEnv struct {
	t      *testing.T
	ctx    context.Context
	db     *store.DB
	svc    *models.Service
	now    time.Time
	admin  *models.Agent
	lead   *models.Agent
	worker *models.Agent
}

func newAccessEnv(t *testing.T, dialect string) *accessEnv {
	t.Helper()
	db := storetest.Open(t, dialect)
	e := &accessEnv{t: t, ctx: context.Background(), db: db, svc: models.NewService(db, ledger.Composer{}),
		now: time.Now().UTC().Truncate(time.Second)}
	e.svc.SetClock(func() time.Time { return e.now })
	e.admin = e.agent(&models.Agent{Name: "ada", Kind: models.KindHuman, Roles: []string{models.RoleAdmin}})
	e.lead = e.agent(&models.Agent{Name: "lee", Kind: models.KindHuman, Roles: []string{models.RoleLead}})
	// The worker holds lead and exec too: an attempt token must not lend it those.
	e.worker = e.agent(&models.Agent{Name: "bot", Kind: models.KindWorker, Roles: []string{"developer", models.RoleLead, models.RoleExec},
		Command: "true"})
	return e
}

func eachAccess(t *testing.T, f func(t *testing.T, e *accessEnv)) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) { f(t, newAccessEnv(t, d)) })
	}
}

func (e *accessEnv) agent(a *models.Agent) *models.Agent {
	e.t.Helper()
	if err := e.svc.Agents.CreateAgent(e.ctx, models.System, a, ""); err != nil {
		e.t.Fatalf("agent %s: %v", a.Name, err)
	}
	return a
}

func (e *accessEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func wantRule(t *testing.T, err error, code, rule string) {
	t.Helper()
	var de *models.Error
	if models.ErrorCode(err) != code {
		t.Fatalf("error %v (code %q), want %s", err, models.ErrorCode(err), code)
	}
	if rule != "" && (!asError(err, &de) || de.Rule != rule) {
		t.Fatalf("error %v names rule %q, want %q", err, de.Rule, rule)
	}
}

func asError(err error, de **models.Error) bool {
	e, ok := err.(*models.Error)
	*de = e
	return ok
}

// workerTask creates a task assigned to the worker and started by the runner.
func (e *accessEnv) workerTask(title string) *models.Task {
	e.t.Helper()
	task, err := e.svc.Tasks.CreateTask(e.ctx, models.System, models.TaskSpec{Title: title, Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}})
	e.must(err)
	runner, err := e.svc.Agents.RunnerAgent(e.ctx)
	e.must(err)
	task, err = e.svc.Tasks.TaskAction(e.ctx, runner, task.ID, models.ActStart, models.ActionInput{})
	e.must(err)
	return task
}

// TestTokenLifetime: a token lasts its TTL (90 days by default), is refused once
// expired or revoked, and records its use at most once a minute.
// checkLastUseThrottled checks that token id (secret, just used) records its last use
// at most once a minute, so authenticating does not write on every request. It moves
// the clock on by 61 seconds.
func checkLastUseThrottled(t *testing.T, e *accessEnv, secret string, id int64) {
	t.Helper()
	lastUsed := func() time.Time {
		got, err := e.db.GetToken(e.ctx, id)
		e.must(err)
		if got.LastUsedAt == nil {
			t.Fatal("no last use recorded")
		}
		return *got.LastUsedAt
	}
	first := e.now
	if !lastUsed().Equal(first) {
		t.Fatalf("last used %v, want %v", lastUsed(), first)
	}
	e.now = e.now.Add(30 * time.Second)
	_, err := e.svc.Tokens.Authenticate(e.ctx, secret)
	e.must(err)
	if !lastUsed().Equal(first) {
		t.Fatalf("a use 30s later was written (%v): at most once a minute", lastUsed())
	}
	e.now = e.now.Add(31 * time.Second)
	_, err = e.svc.Tokens.Authenticate(e.ctx, secret)
	e.must(err)
	if !lastUsed().Equal(e.now) {
		t.Fatalf("last used %v, want %v after a minute", lastUsed(), e.now)
	}
}

func TestTokenLifetime(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		secret, tok, err := e.svc.Tokens.IssueToken(e.ctx, models.System, "lee", "laptop", 0)
		wantRule(t, err, models.EINVALID, "")
		secret, tok, err = e.svc.Tokens.IssueToken(e.ctx, e.lead, "lee", "laptop", time.Hour)
		wantRule(t, err, models.EFORBIDDEN, "admin_only")
		def, err := e.svc.Tokens.CreateToken(e.ctx, e.admin, "lee", "default")
		e.must(err)
		secret, tok, err = e.svc.Tokens.IssueToken(e.ctx, e.admin, "lee", "laptop", 30*24*time.Hour)
		e.must(err)
		if !tok.ExpiresAt.Equal(e.now.Add(30 * 24 * time.Hour)) {
			t.Fatalf("expires at %v, want in 30 days", tok.ExpiresAt)
		}
		forever, never, err := e.svc.Tokens.IssueToken(e.ctx, e.admin, "lee", "forever", models.NoExpiry)
		e.must(err)
		if never.ExpiresAt != nil {
			t.Fatalf("a token made to never expire expires at %v", never.ExpiresAt)
		}

		a, err := e.svc.Tokens.Authenticate(e.ctx, secret)
		e.must(err)
		if a.ID != e.lead.ID || a.Scope != nil {
			t.Fatalf("authenticated %+v", a)
		}
		first := e.now
		checkLastUseThrottled(t, e, secret, tok.ID)

		e.now = first.Add(89 * 24 * time.Hour)
		_, err = e.svc.Tokens.Authenticate(e.ctx, def)
		e.must(err)
		e.now = first.Add(90 * 24 * time.Hour)
		_, err = e.svc.Tokens.Authenticate(e.ctx, def)
		wantRule(t, err, models.EUNAUTHORIZED, "")
		_, err = e.svc.Tokens.Authenticate(e.ctx, secret)
		wantRule(t, err, models.EUNAUTHORIZED, "")
		_, err = e.svc.Tokens.Authenticate(e.ctx, forever)
		e.must(err)

		// The agent itself may revoke its own token; another agent may not.
		_, err = e.svc.Tokens.RevokeToken(e.ctx, e.worker, never.ID)
		wantRule(t, err, models.EFORBIDDEN, "admin_or_owner")
		rt, err := e.svc.Tokens.RevokeToken(e.ctx, e.lead, never.ID)
		e.must(err)
		if rt.RevokedAt == nil || rt.Status(e.now) != models.TokenRevoked {
			t.Fatalf("revoked token %+v", rt)
		}
		_, err = e.svc.Tokens.Authenticate(e.ctx, forever)
		wantRule(t, err, models.EUNAUTHORIZED, "")
		list, err := e.svc.Tokens.ListTokens(e.ctx, e.admin, "lee")
		e.must(err)
		if len(list) != 3 || list[0].Name != "forever" || list[0].Status(e.now) != models.TokenRevoked || list[2].Status(e.now) != models.TokenExpired {
			t.Fatalf("tokens of lee: %+v", list)
		}
		_, err = e.svc.Tokens.ListTokens(e.ctx, e.worker, "lee")
		wantRule(t, err, models.EFORBIDDEN, "admin_or_owner")

		revoked, err := e.svc.Tokens.RevokeTokensByName(e.ctx, models.System, "lee", "laptop")
		e.must(err)
		if len(revoked) != 1 || revoked[0].ID != tok.ID {
			t.Fatalf("revoked by name: %+v", revoked)
		}
		var types []string
		evs, err := e.db.ListAgentEvents(e.ctx, e.lead.ID, 100)
		e.must(err)
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		if got := strings.Join(types, " "); got != "agent.created token.created token.created token.created token.revoked token.revoked" {
			t.Fatalf("lee's history: %s", got)
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), "cs_") {
				t.Fatalf("event %s holds a secret: %s", ev.Type, ev.Data)
			}
		}
	})
}

func TestParseTokenTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"": models.DefaultTokenTTL, "30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour,
		"never": models.NoExpiry, " Never ": models.NoExpiry, "90m": 90 * time.Minute} {
		if got, err := models.ParseTokenTTL(in); err != nil || got != want {
			t.Errorf("ParseTokenTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0d", "-1h", "soon", "d", "1y", "0"} {
		if _, err := models.ParseTokenTTL(in); models.ErrorCode(err) != models.EINVALID {
			t.Errorf("ParseTokenTTL(%q) = %v, want EINVALID", in, err)
		}
	}
}

// TestAttemptTokenScope: an attempt token acts as its worker on its own task and on
// the tasks it created, and nowhere else, whatever the worker's roles; it dies when
// revoked, with its task's tokens, or when it expires.
// checkAttemptTokenConfined checks that attempt token a, scoped to task own, acts on
// nothing else: not on other, not as a lead or exec though its agent holds both, not
// on its own task (the runner submits it); only on sub-tasks it creates for its own
// role under own. The same agent with a personal token is not confined.
func checkAttemptTokenConfined(t *testing.T, e *accessEnv, a *models.Agent, own, other *models.Task) {
	t.Helper()
	// Another task: nothing, not even what the worker's roles allow.
	_, err := e.svc.Tasks.TaskAction(e.ctx, a, other.ID, models.ActSubmit, models.ActionInput{Summary: "x"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	// Its own task: no action (the runner submits it), and no lead or exec action
	// though the worker holds both.
	_, err = e.svc.Tasks.TaskAction(e.ctx, a, own.ID, models.ActCancel, models.ActionInput{Reason: "x"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	err = e.svc.Goals.CreateGoal(e.ctx, a, &models.Goal{Title: "mine"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	_, err = e.svc.Tasks.CreateTask(e.ctx, a, models.TaskSpec{Title: "for lee", Assignee: "lee"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	_, _, err = e.svc.Tokens.IssueToken(e.ctx, a, "bot", "more", time.Hour)
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	_, err = e.svc.Tokens.ListTokens(e.ctx, a, "bot")
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)

	// Work for another role would run under another agent, perhaps with wider grants.
	_, err = e.svc.Tasks.CreateTask(e.ctx, a, models.TaskSpec{Title: "for ops", Role: "ops"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	child, err := e.svc.Tasks.CreateTask(e.ctx, a, models.TaskSpec{Title: "sub-task", Role: "developer"})
	e.must(err)
	if child.ParentTaskID == nil || *child.ParentTaskID != own.ID || child.CreatorID != e.worker.ID {
		t.Fatalf("a task created by an attempt token: parent %v creator %d", child.ParentTaskID, child.CreatorID)
	}
	if err := a.MayReadTask(child); err != nil {
		t.Fatalf("reading a task it created: %v", err)
	}
	g := &models.Goal{Title: "g"}
	e.must(e.svc.Goals.CreateGoal(e.ctx, e.lead, g))
	_, err = e.svc.Tasks.CreateTask(e.ctx, a, models.TaskSpec{Title: "elsewhere", GoalID: &g.ID})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	if _, err := e.svc.Tasks.TaskAction(e.ctx, a, child.ID, models.ActCancel, models.ActionInput{Reason: "not needed"}); err != nil {
		t.Fatalf("cancelling a task it created: %v", err)
	}
	_, err = e.svc.Tasks.TaskAction(e.ctx, a, own.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
	wantRule(t, err, models.EFORBIDDEN, models.RuleAttemptTokenScope)
	// The same agent with a personal token is not confined.
	if _, err := e.svc.Tasks.TaskAction(e.ctx, e.worker, other.ID, models.ActCancel, models.ActionInput{Reason: "x"}); err != nil {
		t.Fatalf("the worker unscoped: %v", err)
	}
}

func TestAttemptTokenScope(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		own := e.workerTask("own")
		other := e.workerTask("other")
		_, _, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, own.ID, 1, 0)
		wantRule(t, err, models.EINVALID, "")
		_, _, err = e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, 424242, 1, time.Hour)
		wantRule(t, err, models.ENOTFOUND, "")
		secret, tokID, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, own.ID, 1, 40*time.Minute)
		e.must(err)
		a, err := e.svc.Tokens.Authenticate(e.ctx, secret)
		e.must(err)
		if a.ID != e.worker.ID || a.Scope == nil || a.Scope.TaskID != own.ID || a.Scope.TokenID != tokID || a.Scope.Attempt != 1 {
			t.Fatalf("attempt token authenticates as %+v scope %+v", a, a.Scope)
		}
		if err := a.MayReadTask(own); err != nil {
			t.Fatalf("reading its own task: %v", err)
		}
		wantRule(t, a.MayReadTask(other), models.EFORBIDDEN, models.RuleAttemptTokenScope)

		checkAttemptTokenConfined(t, e, a, own, other)

		e.must(e.svc.Tokens.RevokeAttemptToken(e.ctx, tokID))
		e.must(e.svc.Tokens.RevokeAttemptToken(e.ctx, tokID)) // twice changes nothing
		_, err = e.svc.Tokens.Authenticate(e.ctx, secret)
		wantRule(t, err, models.EUNAUTHORIZED, "")

		s2, id2, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, own.ID, 2, 40*time.Minute)
		e.must(err)
		s3, _, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, other.ID, 1, 40*time.Minute)
		e.must(err)
		n, err := e.svc.Tokens.RevokeAttemptTokensForTask(e.ctx, own.ID)
		e.must(err)
		if n != 1 {
			t.Fatalf("revoked %d live tokens of the task, want 1", n)
		}
		_, err = e.svc.Tokens.Authenticate(e.ctx, s2)
		wantRule(t, err, models.EUNAUTHORIZED, "")
		_, err = e.svc.Tokens.Authenticate(e.ctx, s3)
		e.must(err)
		e.now = e.now.Add(40 * time.Minute)
		_, err = e.svc.Tokens.Authenticate(e.ctx, s3)
		wantRule(t, err, models.EUNAUTHORIZED, "")

		personal, err := e.svc.Tokens.CreateToken(e.ctx, e.admin, "bot", "personal")
		e.must(err)
		pa, err := e.svc.Tokens.Authenticate(e.ctx, personal)
		e.must(err)
		if err := e.svc.Tokens.RevokeAttemptToken(e.ctx, 0); models.ErrorCode(err) != models.ENOTFOUND {
			t.Fatalf("revoking no token: %v", err)
		}
		list, err := e.svc.Tokens.ListTokens(e.ctx, e.admin, "bot")
		e.must(err)
		if len(list) != 1 {
			t.Fatalf("bot lists %d tokens, want its personal one only", len(list))
		}
		wantRule(t, e.svc.Tokens.RevokeAttemptToken(e.ctx, list[0].ID), models.ENOTFOUND, "")
		if _, err := e.svc.Tokens.Authenticate(e.ctx, personal); err != nil || pa.Scope != nil {
			t.Fatalf("a personal token after RevokeAttemptToken of it: %v", err)
		}

		e.now = e.now.Add(25 * time.Hour)
		pruned, err := e.svc.Tokens.PruneAttemptTokens(e.ctx)
		e.must(err)
		if pruned != 3 {
			t.Fatalf("pruned %d attempt tokens, want the 3 expired ones", pruned)
		}
		_ = id2
	})
}

// TestLoginLockout: the tenth failed sign-in within the window locks the name for
// 15 minutes; a success resets the count; unknown names lock alike.
func TestLoginLockout(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		for _, name := range []string{"lee", "nobody"} {
			for i := 1; i < models.MaxFailedLogins; i++ {
				until, err := e.svc.Tokens.LoginFailed(e.ctx, name)
				e.must(err)
				if !until.IsZero() {
					t.Fatalf("%s locked after %d failures", name, i)
				}
			}
			if until, _ := e.svc.Tokens.LoginLockedUntil(e.ctx, name); !until.IsZero() {
				t.Fatalf("%s locked before the tenth failure", name)
			}
			until, err := e.svc.Tokens.LoginFailed(e.ctx, strings.ToUpper(name)+" ")
			e.must(err)
			if !until.Equal(e.now.Add(models.LoginLockout)) {
				t.Fatalf("the tenth failure of %s locks until %v, want %v", name, until, e.now.Add(models.LoginLockout))
			}
			got, err := e.svc.Tokens.LoginLockedUntil(e.ctx, name)
			e.must(err)
			if !got.Equal(until) {
				t.Fatalf("%s locked until %v, want %v", name, got, until)
			}
		}
		e.now = e.now.Add(models.LoginLockout)
		if until, _ := e.svc.Tokens.LoginLockedUntil(e.ctx, "lee"); !until.IsZero() {
			t.Fatalf("still locked after %s", models.LoginLockout)
		}
		for range 9 {
			_, err := e.svc.Tokens.LoginFailed(e.ctx, "lee")
			e.must(err)
		}
		e.must(e.svc.Tokens.LoginSucceeded(e.ctx, "lee"))
		until, err := e.svc.Tokens.LoginFailed(e.ctx, "lee")
		e.must(err)
		if !until.IsZero() {
			t.Fatal("a failure after a success locked the account: the success did not reset the count")
		}
		// Failures further apart than the window do not add up.
		for range 12 {
			e.now = e.now.Add(models.LoginLockout + time.Second)
			until, err := e.svc.Tokens.LoginFailed(e.ctx, "ada")
			e.must(err)
			if !until.IsZero() {
				t.Fatal("failures spread over hours locked the account")
			}
		}
	})
}

// TestAgentChangesAndSandbox: only an admin changes an agent; each change is one
// agent.changed event with the fields before and after (a command diff too); the
// sandbox is validated and normalised; non-admins see neither commands nor sandboxes.
// checkSandboxChangesRefused checks that a sandbox is only changed by an admin, with
// valid paths and ports, and only on an agent (not a person), and that a refused
// change records no agent.changed event.
func checkSandboxChangesRefused(t *testing.T, e *accessEnv) {
	t.Helper()
	bot := *e.worker
	bot.Sandbox = models.AgentSandbox{Write: []string{"/srv/cache/"}}
	wantRule(t, e.svc.Agents.UpdateAgent(e.ctx, e.lead, &bot), models.EFORBIDDEN, "admin_only")

	bad := *e.worker
	bad.Sandbox = models.AgentSandbox{Read: []string{"relative/dir", "/"}, Write: []string{"/ok", "/x\x00y"}, Connect: []int{0, 70000}}
	err := e.svc.Agents.UpdateAgent(e.ctx, e.admin, &bad)
	wantRule(t, err, models.EINVALID, "")
	fields := err.(*models.Error).Fields
	for _, f := range []string{"sandbox.read", "sandbox.write", "sandbox.connect"} {
		if fields[f] == "" {
			t.Errorf("no message for %s: %v", f, fields)
		}
	}
	human := *e.lead
	human.Sandbox = models.AgentSandbox{AllowUnix: true}
	wantRule(t, e.svc.Agents.UpdateAgent(e.ctx, e.admin, &human), models.EINVALID, "")
	if n := len(e.events("agent.changed")); n != 0 {
		t.Fatalf("%d agent.changed events after refused changes", n)
	}
}

func TestAgentChangesAndSandbox(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		checkSandboxChangesRefused(t, e)

		bot := *e.worker
		bot.Command = "claude -p\n--model haiku"
		bot.Roles = []string{"developer"}
		bot.Sandbox = models.AgentSandbox{Read: []string{" /opt/sdk/../sdk/ "}, Write: []string{"/srv/cache/", "/srv/cache"}, Connect: []int{5432, 443, 443}, AllowUnix: true}
		e.must(e.svc.Agents.UpdateAgent(e.ctx, e.admin, &bot))
		got, err := e.db.GetAgent(e.ctx, bot.ID)
		e.must(err)
		want := models.AgentSandbox{Read: []string{"/opt/sdk"}, Write: []string{"/srv/cache"}, Connect: []int{443, 5432}, AllowUnix: true}
		if !got.Sandbox.Equal(want) {
			t.Fatalf("stored sandbox %+v, want %+v", got.Sandbox, want)
		}
		evs := e.events("agent.changed")
		if len(evs) != 1 || evs[0].AgentID == nil || *evs[0].AgentID != bot.ID || *evs[0].ActorID != e.admin.ID {
			t.Fatalf("agent.changed events: %+v", evs)
		}
		var data struct {
			Agent   string
			By      string
			Changes map[string]models.FieldChange
		}
		e.must(json.Unmarshal(evs[0].Data, &data))
		if data.Agent != "bot" || data.By != "ada" {
			t.Fatalf("event names agent %q by %q", data.Agent, data.By)
		}
		for _, f := range []string{"command", "roles", "sandbox.read", "sandbox.write", "sandbox.connect", "sandbox.allow_unix"} {
			if _, ok := data.Changes[f]; !ok {
				t.Errorf("change of %s not recorded: %s", f, evs[0].Data)
			}
		}
		if len(data.Changes) != 6 {
			t.Errorf("recorded %d changes, want 6: %s", len(data.Changes), evs[0].Data)
		}
		cmd := data.Changes["command"]
		if cmd.Before != "true" || cmd.After != "claude -p\n--model haiku" || !strings.Contains(cmd.Diff, "+--model haiku") || !strings.Contains(cmd.Diff, "-true") {
			t.Fatalf("command change %+v", cmd)
		}

		// Saving without a change records nothing.
		e.must(e.svc.Agents.UpdateAgent(e.ctx, e.admin, got))
		if n := len(e.events("agent.changed")); n != 1 {
			t.Fatalf("%d agent.changed events after a save without change", n)
		}

		// What a non-admin sees.
		seen := got.VisibleTo(e.lead)
		if seen.Command != "" || seen.Workdir != "" || !seen.Sandbox.IsZero() || seen.Name != "bot" {
			t.Fatalf("a lead sees %+v", seen)
		}
		if full := got.VisibleTo(e.admin); full.Command != bot.Command || !full.Sandbox.Equal(want) {
			t.Fatalf("an admin sees %+v", full)
		}
		red := evs[0].VisibleTo(e.lead)
		if strings.Contains(string(red.Data), "claude") || strings.Contains(string(red.Data), "/opt/sdk") || strings.Contains(string(red.Data), "5432") {
			t.Fatalf("a lead sees the event %s", red.Data)
		}
		if !strings.Contains(string(red.Data), `"command":{"before":null,"after":null,"hidden":true}`) || !strings.Contains(string(red.Data), `"roles"`) {
			t.Fatalf("the redacted event does not name what changed: %s", red.Data)
		}
		created := e.events("agent.created")
		for _, ev := range created {
			if r := ev.VisibleTo(e.lead); strings.Contains(string(r.Data), `"command"`) {
				t.Fatalf("a lead sees the command in %s", r.Data)
			}
		}
		if full := evs[0].VisibleTo(e.admin); string(full.Data) != string(evs[0].Data) {
			t.Fatal("an admin sees a redacted event")
		}
	})
}

func (e *accessEnv) events(typ string) []models.Event {
	e.t.Helper()
	evs, err := e.db.ListEvents(e.ctx, 0, 1000)
	e.must(err)
	var out []models.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// touchCounter is a store that counts the writes of a token's last use.
type touchCounter struct {
	models.Store
	n int
}

// TouchToken counts the call and passes it on.
func (c *touchCounter) TouchToken(ctx context.Context, id int64, at, since time.Time) error {
	c.n++
	return c.Store.TouchToken(ctx, id, at, since)
}

// TestAuthenticateIsARead: authenticating with a token used less than a minute ago
// writes nothing, so that authentication stays cheap.
func TestAuthenticateIsARead(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			st := &touchCounter{Store: storetest.Open(t, d)}
			svc := models.NewService(st, ledger.Composer{})
			now := time.Now().UTC()
			svc.SetClock(func() time.Time { return now })
			if err := svc.Agents.CreateAgent(context.Background(), models.System, &models.Agent{Name: "lee", Kind: models.KindHuman, Roles: []string{"lead"}}, ""); err != nil {
				t.Fatal(err)
			}
			secret, err := svc.Tokens.CreateToken(context.Background(), models.System, "lee", "t")
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				now = now.Add(10 * time.Second)
				if _, err := svc.Tokens.Authenticate(context.Background(), secret); err != nil {
					t.Fatal(err)
				}
				if st.n != 1 {
					t.Fatalf("after %d uses within a minute, %d writes of the last use; want 1", i+1, st.n)
				}
			}
			now = now.Add(time.Minute)
			if _, err := svc.Tokens.Authenticate(context.Background(), secret); err != nil || st.n != 2 {
				t.Fatalf("a use a minute later: %v, %d writes; want 2", err, st.n)
			}
		})
	}
}

// TestOneLiveAttemptTokenPerTask: issuing a task's next attempt token revokes the
// earlier one (a runner that died before revoking it, a worker's escaped process still
// holding it); another task's token lives on.
func TestOneLiveAttemptTokenPerTask(t *testing.T) {
	eachAccess(t, func(t *testing.T, e *accessEnv) {
		own, other := e.workerTask("own"), e.workerTask("other")
		first, _, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, own.ID, 1, time.Hour)
		e.must(err)
		elsewhere, _, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, other.ID, 1, time.Hour)
		e.must(err)
		second, _, err := e.svc.Tokens.IssueAttemptToken(e.ctx, e.worker.ID, own.ID, 2, time.Hour)
		e.must(err)
		if _, err := e.svc.Tokens.Authenticate(e.ctx, first); err == nil {
			t.Fatal("attempt 1's token still authenticates after attempt 2's was issued")
		}
		for _, s := range []string{second, elsewhere} {
			if _, err := e.svc.Tokens.Authenticate(e.ctx, s); err != nil {
				t.Fatalf("a live token: %v", err)
			}
		}
	})
}
