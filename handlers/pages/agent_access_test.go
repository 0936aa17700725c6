package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// tryLogin posts the login form as name with password from a fresh browser.
func (e *env) tryLogin(name, password string) page {
	e.t.Helper()
	b := e.browser()
	form := b.get("/login")
	return b.do("POST", "/login", url.Values{"name": {name}, "password": {password}, "csrf": {csrfOf(form.Body)}}, nil)
}

// TestLoginLockout: the tenth failed sign-in locks the account for 15 minutes, from any
// address and in every server process (the lock is in the database); while locked,
// the right password gets the same answer as a wrong one; afterwards a success resets
// the count. Names that are no agent's lock alike.
func TestLoginLockout(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newEnv(t, dialect)
			e.agent("alice", models.KindHuman, "lead")
			now := time.Now().UTC()
			e.svc.SetClock(func() time.Time { return now })
			for i := 1; i < models.MaxFailedLogins; i++ {
				if r := e.tryLogin("alice", "wrong password "+strconv.Itoa(i)); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "wrong name or password") {
					t.Fatalf("failure %d: %d", i, r.Status)
				}
			}
			r := e.tryLogin("alice", "wrong password 10")
			if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Body, "this account is locked after 10 failed sign-ins") {
				t.Fatalf("the tenth failure: %d %s", r.Status, excerpt(r.Body))
			}
			right := e.tryLogin("alice", testPassword)
			wrong := e.tryLogin("alice", "still wrong!!")
			for _, r := range []page{right, wrong} {
				if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Body, "this account is locked") || strings.Contains(r.Header.Get("Set-Cookie"), "cs_session=") {
					t.Fatalf("a sign-in to a locked account: %d %s", r.Status, excerpt(r.Body))
				}
			}
			if flash(right.Body) != flash(wrong.Body) {
				t.Fatalf("the right and a wrong password get different answers: %q vs %q", flash(right.Body), flash(wrong.Body))
			}
			// Another server process on the same database (its own per-address limiter):
			// still locked.
			other := newEnvOn(t, e.db, envOptions{})
			other.svc.SetClock(func() time.Time { return now })
			if r := other.tryLogin("alice", testPassword); r.Status != http.StatusTooManyRequests {
				t.Fatalf("another process lets alice in: %d", r.Status)
			}
			// The rest signs in through the other process: this one's per-address limit
			// (a minute of real time) is used up by the ten failures.
			e = other
			now = now.Add(models.LoginLockout)
			if r := e.tryLogin("alice", testPassword); r.Status != http.StatusSeeOther {
				t.Fatalf("after %s: %d %s", models.LoginLockout, r.Status, excerpt(r.Body))
			}
			if _, err := e.db.GetLoginFailures(context.Background(), "alice"); models.ErrorCode(err) != models.ENOTFOUND {
				t.Fatalf("a successful sign-in left the failures recorded: %v", err)
			}

			// Failures from elsewhere (other addresses, other processes) count too.
			for range models.MaxFailedLogins {
				if _, err := e.svc.Tokens.LoginFailed(context.Background(), "alice"); err != nil {
					t.Fatal(err)
				}
			}
			if r := e.tryLogin("alice", testPassword); r.Status != http.StatusTooManyRequests {
				t.Fatalf("after ten failures from elsewhere: %d", r.Status)
			}
			for range models.MaxFailedLogins {
				if _, err := e.svc.Tokens.LoginFailed(context.Background(), "nobody"); err != nil {
					t.Fatal(err)
				}
			}
			if r := e.tryLogin("nobody", "whatever it is"); r.Status != http.StatusTooManyRequests || !strings.Contains(r.Body, "this account is locked") {
				t.Fatalf("an unknown name after ten failures: %d", r.Status)
			}
		})
	}
}

// flash is the text of a page's flash message.
func flash(html string) string { return between(html, `data-testid="flash"`, "</div>") }

// TestAgentPageAccess: admins see and edit a worker's sandbox; everyone sees the
// agent's history, but only admins the values of its command and sandbox; admins and
// the agent itself list its tokens and revoke them (with the CSRF token), others
// neither.
func TestAgentPageAccess(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			ctx := context.Background()
			e.agent("ada", models.KindHuman, models.RoleAdmin)
			eve := e.agent("eve", models.KindHuman, "editor")
			e.agent("dev", models.KindHuman, "developer")
			bot := handlertest.CreateAgent(t, e.svc, "bot", models.KindWorker, "", "developer")
			botPath := "/agents/" + strconv.FormatInt(bot.ID, 10)
			evePath := "/agents/" + strconv.FormatInt(eve.ID, 10)
			admin := e.browser().login("ada")
			dev := e.browser().login("dev")

			checkSandboxAdminOnly(t, e, admin, dev, bot, botPath)
			// Tokens: a new one with its lifetime; listed without a secret; revoked.
			tok := admin.post(evePath+"/tokens", url.Values{"token_name": {"laptop"}, "expires": {"30d"}})
			tok.want(t, http.StatusOK, `data-testid="new-token-value"`, `data-testid="agent-tokens"`)
			secret := between(tok.Body, `data-testid="new-token-value">`, "<")
			list, err := e.svc.Tokens.ListTokens(ctx, models.System, "eve")
			if err != nil || len(list) != 2 || list[0].Name != "laptop" {
				t.Fatalf("eve's tokens: %+v %v", list, err)
			}
			laptop := list[0]
			if d := time.Until(*laptop.ExpiresAt); d < 29*24*time.Hour || d > 31*24*time.Hour {
				t.Fatalf("a 30-day token expires in %s", d)
			}
			page := admin.get(evePath)
			page.want(t, http.StatusOK, `data-testid="token-row-`+strconv.FormatInt(laptop.ID, 10)+`" data-status="active"`,
				`data-testid="token-revoke-`+strconv.FormatInt(laptop.ID, 10)+`"`, "never") // the test token was never used
			if strings.Contains(page.Body, secret) || strings.Contains(page.Body, laptop.Hash) {
				t.Fatal("the token list shows a secret or its hash")
			}
			revoke := evePath + "/tokens/" + strconv.FormatInt(laptop.ID, 10) + "/revoke"
			if r := admin.do("POST", revoke, url.Values{}, nil); r.Status != http.StatusForbidden {
				t.Fatalf("a revocation without the CSRF token: %d", r.Status)
			}
			dev.post(revoke, nil).want(t, http.StatusForbidden)
			if _, err := e.svc.Tokens.Authenticate(ctx, secret); err != nil {
				t.Fatalf("refused revocations revoked the token: %v", err)
			}
			if strings.Contains(dev.get(evePath).Body, "agent-tokens") {
				t.Fatal("a developer sees another agent's tokens")
			}
			// The wrong agent's path does not reach the token.
			admin.post(botPath+"/tokens/"+strconv.FormatInt(laptop.ID, 10)+"/revoke", nil).want(t, http.StatusNotFound)

			eveRevokesOwnToken(t, e, evePath, revoke, secret, laptop)
		})
	}
}

// eveRevokesOwnToken checks that eve herself sees and revokes her own token, which
// then no longer authenticates.
func eveRevokesOwnToken(t *testing.T, e *env, evePath, revoke, secret string, laptop models.Token) {
	t.Helper()
	ctx := context.Background()
	// Eve herself sees and revokes her own tokens.
	self := e.browser().login("eve")
	self.get(evePath).want(t, http.StatusOK, `data-testid="agent-tokens"`, `data-testid="token-revoke-`+strconv.FormatInt(laptop.ID, 10)+`"`)
	r := self.post(revoke, nil)
	r.want(t, http.StatusSeeOther)
	if _, err := e.svc.Tokens.Authenticate(ctx, secret); models.ErrorCode(err) != models.EUNAUTHORIZED {
		t.Fatalf("a revoked token authenticates: %v", err)
	}
	self.get(evePath).want(t, http.StatusOK, "Revoked token laptop.", `data-status="revoked"`, "token revoked: laptop")
}

// checkSandboxAdminOnly checks that the sandbox is shown and edited by admins only.
func checkSandboxAdminOnly(t *testing.T, e *env, admin, dev *browser, bot *models.Agent, botPath string) {
	t.Helper()
	ctx := context.Background()
	// Sandbox: shown and edited by admins only.
	page := admin.get(botPath)
	page.want(t, http.StatusOK, `data-testid="sandbox-policy"`, `data-testid="sandbox-fields"`, "nothing beyond the defaults")
	bad := admin.post(botPath, url.Values{"roles": {"developer"}, "command": {"true"}, "concurrency": {"1"},
		"sandbox.write": {"relative/path"}, "sandbox.connect": {"443, https"}})
	bad.want(t, http.StatusUnprocessableEntity)
	assertFieldError(t, bad.Body, "sandbox.connect", `"https" is not a port number`)
	bad = admin.post(botPath, url.Values{"roles": {"developer"}, "command": {"true"}, "concurrency": {"1"}, "sandbox.write": {"relative/path"}})
	assertFieldError(t, bad.Body, "sandbox.write", "is not an absolute path")
	admin.post(botPath, url.Values{"roles": {"developer"}, "command": {"claude -p --secret-flag"}, "concurrency": {"1"},
		"sandbox.read": {"/opt/sdk"}, "sandbox.write": {"/srv/cache,\n/var/tmp/bot"}, "sandbox.connect": {"443, 5432"},
		"sandbox.allow_unix": {"on"}}).want(t, http.StatusSeeOther)
	got, err := e.db.GetAgent(ctx, bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := models.AgentSandbox{Read: []string{"/opt/sdk"}, Write: []string{"/srv/cache", "/var/tmp/bot"}, Connect: []int{443, 5432}, AllowUnix: true}
	if !got.Sandbox.Equal(want) {
		t.Fatalf("saved sandbox %+v, want %+v", got.Sandbox, want)
	}
	page = admin.get(botPath)
	page.want(t, http.StatusOK, `data-testid="sandbox-policy"`, "<code>/var/tmp/bot</code>", "<code>5432</code>",
		`data-testid="history"`, "+sandbox.write: /srv/cache, /var/tmp/bot", "+command: claude -p --secret-flag", "-command: true")
	if h := between(page.Body, `data-testid="history"`, "</ol>"); !strings.Contains(h, ">ada") && !strings.Contains(h, "ada ·") {
		t.Fatalf("the history does not name who changed the agent: %s", h)
	}

	seen := dev.get(botPath)
	seen.want(t, http.StatusOK, `data-testid="history"`, "<code>sandbox.write</code>", "<code>command</code>")
	for _, leak := range []string{"sandbox-policy", "sandbox-fields", "/var/tmp/bot", "secret-flag", "5432", "agent-tokens"} {
		if strings.Contains(seen.Body, leak) {
			t.Fatalf("a developer sees %q on a worker's page", leak)
		}
	}
	dev.post(botPath, url.Values{"roles": {"developer"}, "command": {"true"}, "concurrency": {"1"}, "sandbox.write": {"/"}}).
		want(t, http.StatusForbidden)
}
