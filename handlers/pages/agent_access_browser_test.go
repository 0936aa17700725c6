package pages_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
)

// TestBrowserAgentAccess: an admin gives a worker a sandbox in the edit form and sees
// it under Sandbox and in the history, then creates a token for a person and revokes
// it with its Revoke button, after which the token is refused; screenshots of both
// pages.
func TestBrowserAgentAccess(t *testing.T) {
	t.Parallel()
	ctx := chrome(t)
	e := newAdmEnv(t, pagesLocal)
	bg := context.Background()
	w := &models.Agent{Name: "claude-dev", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "claude -p", Concurrency: 1}
	if err := e.svc.Agents.CreateAgent(bg, models.System, w, ""); err != nil {
		t.Fatal(err)
	}
	dir := artifacts(t)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "agent-"+name+".png"), buf, 0o644)
		})
	}
	base := e.srv.URL
	workerPage := base + "/agents/" + strconv.FormatInt(w.ID, 10)
	evePage := base + "/agents/" + strconv.FormatInt(e.agentID("eve"), 10)

	var policy, history, secret string
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login?next=/agents"),
		chromedp.WaitVisible(byTestID("login-name")),
		chromedp.SendKeys(byTestID("login-name"), "ada"),
		chromedp.SendKeys(byTestID("login-password"), admPassword),
		chromedp.Click(byTestID("login-submit")),
		chromedp.WaitVisible(byTestID("agents-table")),

		chromedp.Navigate(workerPage),
		chromedp.WaitVisible(byTestID("sandbox-fields")),
		chromedp.SetValue(byTestID("sandbox.write"), "/srv/cache/go"),
		chromedp.SetValue(byTestID("sandbox.connect"), "443, 5432"),
		chromedp.Click(byTestID("agent-edit-submit")),
		chromedp.WaitVisible(byTestID("flash")),
		read(chromedp.Text(byTestID("sandbox-policy")), &policy),
		read(chromedp.Text(byTestID("history")), &history),
		shot("worker-sandbox"),

		chromedp.Navigate(evePage),
		chromedp.WaitVisible(byTestID("agent-token-form")),
		chromedp.SendKeys(byTestID("token_name"), "laptop"),
		chromedp.SetValue(byTestID("expires"), "30d"),
		chromedp.Click(byTestID("agent-token-submit")),
		chromedp.WaitVisible(byTestID("new-token-value")),
		read(chromedp.Text(byTestID("new-token-value")), &secret),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(policy, "/srv/cache/go") || !strings.Contains(policy, "5432") {
		t.Fatalf("the Sandbox card shows %q", policy)
	}
	if !strings.Contains(history, "sandbox.write") || !strings.Contains(history, "+sandbox.connect: 443, 5432") {
		t.Fatalf("the history shows %q", history)
	}
	if _, err := e.svc.Tokens.Authenticate(bg, strings.TrimSpace(secret)); err != nil {
		t.Fatalf("the new token: %v", err)
	}
	list, err := e.svc.Tokens.ListTokens(bg, models.System, "eve")
	if err != nil || len(list) == 0 {
		t.Fatalf("eve's tokens: %v", err)
	}
	browseRevokeToken(t, ctx, e, evePage, secret, list, shot)
}

// browseRevokeToken revokes eve's first token on her page, which then no longer
// authenticates.
func browseRevokeToken(t *testing.T, ctx context.Context, e *admEnv, evePage, secret string, list []models.Token, shot func(string) chromedp.Action[chromedp.Void]) {
	t.Helper()
	bg := context.Background()
	var status chromedp.AttributeResult
	id := strconv.FormatInt(list[0].ID, 10)
	err := chromedp.Do(ctx,
		chromedp.Navigate(evePage),
		chromedp.WaitVisible(byTestID("token-revoke-"+id)),
		chromedp.Click(byTestID("token-revoke-"+id)),
		chromedp.WaitVisible(byTestID("flash")),
		read(chromedp.AttributeValue(byTestID("token-row-"+id), "data-status"), &status),
		shot("tokens"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if status.Value != models.TokenRevoked {
		t.Fatalf("the token row says %q after Revoke", status.Value)
	}
	if _, err := e.svc.Tokens.Authenticate(bg, strings.TrimSpace(secret)); models.ErrorCode(err) != models.EUNAUTHORIZED {
		t.Fatalf("a revoked token: %v", err)
	}
}
