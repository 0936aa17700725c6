package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// apiForgeToken is a distinctive token that no answer may carry.
const apiForgeToken = "glpat-APIforgeTokenNeverAnswered-42"

// TestForgesAPI: an admin creates a forge (201 with webhook_secret, once), lists it
// with its webhook path, maps a login to an agent and unmaps it, points an agent at
// it, patches it (a token given replaces the stored one, one left out keeps it),
// rotates its secret and deletes it once no agent names it; wrong fields are 422
// naming them; anyone else is 403 and changes nothing. No answer carries the token,
// and no answer but the creation's and the rotation's carries a secret.
func TestForgesAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("root", models.KindHuman, models.RoleAdmin)
		e.agent("dev", models.KindHuman, "developer")
		e.agent("rev", models.KindHuman, "reviewer")
		var answers [][]byte
		do := func(want int, as, method, path string, body any) resp {
			t.Helper()
			r := e.must(want, as, method, path, body)
			answers = append(answers, r.Raw)
			return r
		}

		r := do(http.StatusUnprocessableEntity, "root", "POST", "/forges", map[string]any{"name": "gl", "kind": "gitlab", "repo": "nope", "token": apiForgeToken})
		if r.fields()["repo"] == nil {
			t.Fatalf("bad repo not named: %s", r.Raw)
		}
		created := do(http.StatusCreated, "root", "POST", "/forges", map[string]any{"name": "gl", "kind": "gitlab",
			"repo": "group/sub/proj", "base_url": "https://gitlab.example.test", "token": apiForgeToken})
		secret := created.str("webhook_secret")
		if len(secret) != 64 || created.str("webhook_path") != "/api/v1/forges/gl/webhook" || created.str("repo") != "group/sub/proj" {
			t.Fatalf("create: %s", created.Raw)
		}
		do(http.StatusConflict, "root", "POST", "/forges", map[string]any{"name": "gl", "kind": "gitlab", "repo": "a/b", "token": "x"})

		do(http.StatusOK, "root", "PUT", "/forges/gl/users/octo", map[string]any{"agent": "rev"})
		do(http.StatusNotFound, "root", "PUT", "/forges/gl/users/octo2", map[string]any{"agent": "nobody"})
		do(http.StatusCreated, "root", "POST", "/agents", map[string]any{"name": "bot", "kind": "worker", "roles": []string{"developer"},
			"command": "true", "workdir": t.TempDir(), "worktree": true})
		do(http.StatusUnprocessableEntity, "root", "PATCH", "/agents/bot", map[string]any{"forge": "nosuch"})
		do(http.StatusOK, "root", "PATCH", "/agents/bot", map[string]any{"forge": "gl"})
		list := do(http.StatusOK, "root", "GET", "/forges", nil)
		raw := string(list.Raw)
		for _, want := range []string{`"login":"octo"`, `"agent":"rev"`, `"agents":["bot"]`, `"webhook_path":"/api/v1/forges/gl/webhook"`} {
			if !strings.Contains(raw, want) {
				t.Fatalf("list lacks %s: %s", want, raw)
			}
		}
		do(http.StatusConflict, "root", "DELETE", "/forges/gl", nil)

		do(http.StatusOK, "root", "PATCH", "/forges/gl", map[string]any{"target_branch": "release"})
		f, err := e.db.GetForgeByName(t.Context(), "gl")
		if err != nil || f.Token != apiForgeToken || f.TargetBranch != "release" || f.WebhookSecret != secret {
			t.Fatalf("after patch without token: %+v %v", f, err)
		}
		do(http.StatusUnprocessableEntity, "root", "PATCH", "/forges/gl", map[string]any{"token": " "})
		do(http.StatusOK, "root", "PATCH", "/forges/gl", map[string]any{"token": "second-" + apiForgeToken})
		if f, _ = e.db.GetForgeByName(t.Context(), "gl"); f.Token != "second-"+apiForgeToken {
			t.Fatal("a token given did not replace the stored one")
		}
		rot := do(http.StatusOK, "root", "POST", "/forges/gl/rotate-secret", nil)
		secret2 := rot.str("webhook_secret")
		if len(secret2) != 64 || secret2 == secret {
			t.Fatalf("rotate: %s", rot.Raw)
		}
		forgesRefusedToOthers(t, e)

		do(http.StatusNoContent, "root", "DELETE", "/forges/gl/users/octo", nil)
		do(http.StatusOK, "root", "PATCH", "/agents/bot", map[string]any{"forge": ""})
		do(http.StatusNoContent, "root", "DELETE", "/forges/gl", nil)
		if l := do(http.StatusOK, "root", "GET", "/forges", nil); strings.Contains(string(l.Raw), "gl") {
			t.Fatalf("deleted forge listed: %s", l.Raw)
		}
		answers = append(answers, e.must(http.StatusOK, "root", "GET", "/events", nil).Raw, e.must(http.StatusOK, "root", "GET", "/agents", nil).Raw)
		for i, a := range answers {
			s := string(a)
			if strings.Contains(s, apiForgeToken) {
				t.Fatalf("answer %d carries the token: %s", i, s)
			}
			if (strings.Contains(s, secret) && i != 1) || (strings.Contains(s, secret2) && !strings.Contains(s, `"webhook_secret":"`+secret2)) {
				t.Fatalf("answer %d carries a webhook secret: %s", i, s)
			}
		}
	})
}

// forgesRefusedToOthers: a non-admin is 403 on every forge endpoint and changes nothing.
func forgesRefusedToOthers(t *testing.T, e *apiEnv) {
	t.Helper()
	before := e.eventCount()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/forges", nil},
		{"POST", "/forges", map[string]any{"name": "x", "kind": "github", "repo": "a/b", "token": "t"}},
		{"PATCH", "/forges/gl", map[string]any{"repo": "a/b"}},
		{"POST", "/forges/gl/rotate-secret", nil},
		{"DELETE", "/forges/gl", nil},
		{"PUT", "/forges/gl/users/octo", map[string]any{"agent": "dev"}},
		{"DELETE", "/forges/gl/users/octo", nil},
	} {
		r := e.do("dev", c.method, c.path, c.body)
		if r.Status != http.StatusForbidden || strings.Contains(string(r.Raw), "group/sub") {
			t.Fatalf("dev %s %s: %d %s", c.method, c.path, r.Status, r.Raw)
		}
	}
	if e.eventCount() != before {
		t.Fatal("a refused request changed something")
	}
}
