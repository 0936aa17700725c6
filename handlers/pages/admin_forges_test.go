package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// pageForgeToken is a distinctive forge token: no page, answer or event may show it.
const pageForgeToken = "ghp_PAGESforgeTOKENmustNeverRender77"

var forgeSecretRE = regexp.MustCompile(`data-testid="new-forge-secret-value">([0-9a-f]{64})<`)

// addForge adds forge gh through the add form and returns the secret its answer shows.
func addForge(t *testing.T, ada *admClient) string {
	t.Helper()
	made := ada.post("/forges", url.Values{"name": {"gh"}, "kind": {"github"}, "repo": {"acme/widgets"}, "token": {pageForgeToken}})
	made.want(t, http.StatusOK, `data-testid="new-forge-secret"`, `data-testid="forge-row-gh"`, "/api/v1/forges/gh/webhook", "application/json")
	m := forgeSecretRE.FindStringSubmatch(made.Body)
	if m == nil {
		t.Fatalf("no secret shown:\n%s", excerpt(made.Body))
	}
	if strings.Contains(made.Body, pageForgeToken) {
		t.Fatal("the creation's answer shows the token")
	}
	return m[1]
}

// worker adds a worktree worker, which may name a forge.
func worker(t *testing.T, env *admEnv, name string) *models.Agent {
	t.Helper()
	a := &models.Agent{Name: name, Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Workdir: t.TempDir(), Worktree: true, Concurrency: 1}
	must(t, env.svc.Agents.CreateAgent(context.Background(), models.System, a, ""))
	return a
}

// TestForgesAdminPage: an admin adds a forge (a wrong repository or a missing token
// re-renders the form with the field's error and 422, without the token typed), sees
// its webhook URL and secret once, maps a login to an agent, points a worker at the
// forge from the agent's edit form, cannot delete the forge while the worker names
// it, saves its settings (a token typed replaces the stored one, an empty token input
// keeps it; a refused save re-renders without the token), rotates the secret (shown
// once), unmaps the login and deletes the forge; anyone else gets 403 and changes
// nothing.
func TestForgesAdminPage(t *testing.T) {
	env := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	ada := env.login("ada")
	ada.get("/agents").want(t, http.StatusOK, `data-testid="forges-link"`)
	ada.get("/forges").want(t, http.StatusOK, `data-testid="forge-add-form"`, `type="password"`)

	bad := ada.post("/forges", url.Values{"name": {"gh"}, "kind": {"github"}, "repo": {"widgets"}, "token": {pageForgeToken}})
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="repo-error"`, "OWNER/NAME", `value="widgets"`)
	if strings.Contains(bad.Body, pageForgeToken) || strings.Contains(bad.Body, "new-forge-secret") {
		t.Fatal("a refused forge re-rendered the token or showed a secret")
	}
	ada.post("/forges", url.Values{"name": {"gh"}, "kind": {"github"}, "repo": {"acme/widgets"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="token-error"`)
	secret := addForge(t, ada)
	f, err := env.db.GetForgeByName(ctx, "gh")
	if err != nil || f.Token != pageForgeToken || f.WebhookSecret != secret || f.Repo != "acme/widgets" {
		t.Fatalf("stored %+v %v", f, err)
	}
	ada.post("/forges", url.Values{"name": {"gh"}, "kind": {"github"}, "repo": {"acme/other"}, "token": {"x"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="name-error"`)

	ada.post("/forges/gh/users", url.Values{"login": {"a b"}, "agent": {"eve"}}).want(t, http.StatusUnprocessableEntity, `data-testid="login-error"`)
	if r := ada.post("/forges/gh/users", url.Values{"login": {"octo-eve"}, "agent": {"eve"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("map: %d %s", r.Status, excerpt(r.Body))
	}
	ada.get("/forges/gh").want(t, http.StatusOK, `data-testid="forge-user-octo-eve"`)
	ada.get("/forges").want(t, http.StatusOK, `data-testid="forge-users-gh"`, "octo-eve")

	bot := worker(t, env, "bot")
	forgeOnAgentForm(t, env, ada, bot)
	if r := ada.post("/forges/gh/delete", nil); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/forges/gh" {
		t.Fatalf("delete of a forge in use: %d %s", r.Status, r.Header.Get("Location"))
	}
	if _, err := env.db.GetForgeByName(ctx, "gh"); err != nil {
		t.Fatal("a forge an agent names was deleted")
	}
	ada.get("/forges").want(t, http.StatusOK, `data-testid="forge-agents-gh">bot<`)

	forgeEdit(t, env, ada)
	rot := ada.post("/forges/gh/rotate", nil)
	rot.want(t, http.StatusOK, `data-testid="new-forge-secret"`)
	m := forgeSecretRE.FindStringSubmatch(rot.Body)
	if f, _ = env.db.GetForgeByName(ctx, "gh"); m == nil || m[1] == secret || f.WebhookSecret != m[1] {
		t.Fatal("rotation did not show and store a new secret")
	}
	if strings.Contains(ada.get("/forges/gh").Body, m[1]) {
		t.Fatal("the forge page shows the secret again")
	}

	forgesRefusedToOthers(t, env)
	if r := ada.post("/forges/gh/users/remove", url.Values{"login": {"octo-eve"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("unmap: %d", r.Status)
	}
	if users, _ := env.db.ListForgeUsers(ctx, f.ID); len(users) != 0 {
		t.Fatalf("still mapped: %v", users)
	}
	bot.Forge = ""
	must(t, env.svc.Agents.UpdateAgent(ctx, models.System, bot))
	if r := ada.post("/forges/gh/delete", nil); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/forges" {
		t.Fatalf("delete: %d", r.Status)
	}
	if list, _ := env.db.ListForges(ctx); len(list) != 0 {
		t.Fatal("not deleted")
	}
}

// forgeOnAgentForm points bot at forge gh through the agent's edit form.
func forgeOnAgentForm(t *testing.T, env *admEnv, ada *admClient, bot *models.Agent) {
	t.Helper()
	path := "/agents/" + itoa64(bot.ID)
	page := ada.get(path)
	page.want(t, http.StatusOK, `data-testid="forge"`, `<option value="gh"`)
	form := formValues(t, page.Body, path)
	form.Set("forge", "gh")
	if r := ada.post(path, form); r.Status != http.StatusSeeOther {
		t.Fatalf("agent save: %d %s", r.Status, excerpt(r.Body))
	}
	got, err := env.db.GetAgentByName(context.Background(), "bot")
	if err != nil || got.Forge != "gh" {
		t.Fatalf("agent forge %q %v", got.Forge, err)
	}
	*bot = *got
}

// forgeEdit saves the forge's settings: a refused save re-renders with the field's
// error and 422 and without the token typed; an empty token keeps the stored one; a
// token typed replaces it.
func forgeEdit(t *testing.T, env *admEnv, ada *admClient) {
	t.Helper()
	ctx := context.Background()
	form := formValues(t, ada.get("/forges/gh").Body, "/forges/gh")
	if form.Get("token") != "" || form.Get("repo") != "acme/widgets" || form.Get("kind") != "github" {
		t.Fatalf("edit form %v", form)
	}
	form.Set("repo", "nope")
	form.Set("token", "second-"+pageForgeToken)
	bad := ada.post("/forges/gh", form)
	bad.want(t, http.StatusUnprocessableEntity, `data-testid="repo-error"`)
	if strings.Contains(bad.Body, pageForgeToken) {
		t.Fatal("a refused save re-rendered the token")
	}
	form.Set("repo", "acme/gadgets")
	form.Set("target_branch", "release")
	form.Set("token", "")
	if r := ada.post("/forges/gh", form); r.Status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", r.Status, excerpt(r.Body))
	}
	f, _ := env.db.GetForgeByName(ctx, "gh")
	if f.Repo != "acme/gadgets" || f.TargetBranch != "release" || f.Token != pageForgeToken {
		t.Fatalf("after save without token: %+v", f)
	}
	form.Set("token", "second-"+pageForgeToken)
	if r := ada.post("/forges/gh", form); r.Status != http.StatusSeeOther {
		t.Fatalf("save with token: %d", r.Status)
	}
	if f, _ = env.db.GetForgeByName(ctx, "gh"); f.Token != "second-"+pageForgeToken {
		t.Fatal("the token typed did not replace the stored one")
	}
}

// forgesRefusedToOthers: a non-admin gets 403 on every forge page and action, and
// nothing changes.
func forgesRefusedToOthers(t *testing.T, env *admEnv) {
	t.Helper()
	dev := env.browser().signIn("dev", admPassword, "/")
	before := env.eventCount()
	for _, path := range []string{"/forges", "/forges/gh"} {
		if r := dev.get(path); r.Status != http.StatusForbidden || strings.Contains(r.Body, "acme/") {
			t.Fatalf("dev GET %s: %d", path, r.Status)
		}
	}
	for _, path := range []string{"/forges", "/forges/gh", "/forges/gh/rotate", "/forges/gh/delete", "/forges/gh/users", "/forges/gh/users/remove"} {
		form := url.Values{"name": {"x"}, "kind": {"github"}, "repo": {"a/b"}, "token": {"t"}, "login": {"octo-eve"}, "agent": {"dev"}}
		if r := dev.post(path, form); r.Status != http.StatusForbidden {
			t.Fatalf("dev POST %s: %d", path, r.Status)
		}
	}
	if env.eventCount() != before {
		t.Fatal("a refused request changed something")
	}
}

// TestForgeCredentialsNeverShown: after a forge is added (with a distinctive token),
// mapped, named by an agent, saved with a new token and its secret rotated, no forge
// page, agent page, overview, API answer (forges, agents, events) or stored event
// shows the token; each webhook secret appears only in the answer that made it.
func TestForgeCredentialsNeverShown(t *testing.T) {
	env := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	ada := env.login("ada")
	secret := addForge(t, ada)
	ada.post("/forges/gh/users", url.Values{"login": {"octo"}, "agent": {"eve"}})
	bot := worker(t, env, "bot")
	forgeOnAgentForm(t, env, ada, bot)
	form := formValues(t, ada.get("/forges/gh").Body, "/forges/gh")
	form.Set("token", "second-"+pageForgeToken)
	ada.post("/forges/gh", form)
	rot := ada.post("/forges/gh/rotate", nil)
	m := forgeSecretRE.FindStringSubmatch(rot.Body)
	if m == nil || strings.Contains(rot.Body, pageForgeToken) || strings.Contains(rot.Body, secret) {
		t.Fatal("the rotation's answer shows no new secret, or the token or old secret")
	}
	secret2 := m[1]

	eve, err := env.db.GetAgentByName(ctx, "eve")
	must(t, err)
	bodies := map[string]string{}
	for _, path := range []string{"/forges", "/forges/gh", "/agents", "/agents/" + itoa64(bot.ID), "/agents/" + itoa64(eve.ID), "/"} {
		r := ada.get(path)
		r.want(t, http.StatusOK)
		bodies[path] = r.Body
	}
	tok := handlertest.CreateToken(t, env.svc, "ada", "test")
	for _, path := range []string{"/forges", "/agents", "/events", "/events?after=0"} {
		status, raw := handlertest.Request(t, "GET", env.srv.URL+"/api/v1"+path, tok, "application/json", nil)
		if status != http.StatusOK {
			t.Fatalf("GET /api/v1%s: %d %s", path, status, raw)
		}
		bodies["/api/v1"+path] = string(raw)
	}
	if !strings.Contains(bodies["/api/v1/events"], "forge.created") || !strings.Contains(bodies["/api/v1/forges"], "octo") {
		t.Fatal("the events or forges answer is not the one meant")
	}
	events, err := env.db.ListEvents(ctx, 0, 1000)
	must(t, err)
	for _, e := range events {
		bodies["event "+e.Type] += string(e.Data)
	}
	for what, body := range bodies {
		for _, s := range []string{pageForgeToken, secret, secret2} {
			if strings.Contains(body, s) {
				t.Fatalf("%s shows a credential (%.8s…)", what, s)
			}
		}
	}
}
