package pages_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// historyOf returns the history list of a page, failing when there is none.
func historyOf(t *testing.T, body string) string {
	t.Helper()
	h := between(body, `data-testid="history"`, `</ol>`)
	if h == "" {
		t.Fatalf("no history list:\n%s", excerpt(body))
	}
	return h
}

// TestHistoryOnRulesAndTemplatePages: the rules page and a template's page list the
// changes, newest first, with who made each, when, the fields changed and the diff.
func TestHistoryOnRulesAndTemplatePages(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := &admEnv{newEnvWith(t, d, envOptions{ledger: pagesLocal})}
		ada := e.human("ada", models.RoleLead, models.RoleAdmin)
		eve := e.human("eve", "editor")
		c := e.login("eve")
		ctx := context.Background()

		page := c.get("/rules")
		page.want(t, http.StatusOK, `data-testid="history-empty"`)
		form := formValues(t, page.Body, "/rules")
		form.Set("stacks", strings.Replace(form.Get("stacks"), "command: go test ./...", "command: go test -race ./...", 1))
		c.post("/rules", form).want(t, http.StatusSeeOther)
		h := historyOf(t, c.get("/rules").Body)
		for _, want := range []string{`data-testid="history-item"`, "Rules saved", "eve", "<code>stacks.go</code>",
			`data-testid="history-diff"`, `<span class="diff-del">-        command: go test ./...`, `<span class="diff-add">+        command: go test -race ./...`} {
			if !strings.Contains(h, want) {
				t.Fatalf("rules history lacks %q:\n%s", want, h)
			}
		}

		tpl := func(review string) *models.Template {
			return &models.Template{Name: "ship", Steps: []models.Step{{Role: "developer", Brief: "Build it"}, {Role: "reviewer", Brief: review}}}
		}
		if err := e.svc.Templates.SaveTemplate(ctx, eve, tpl("Review it")); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.Templates.SaveTemplate(ctx, ada, tpl("Review it twice")); err != nil {
			t.Fatal(err)
		}
		h = historyOf(t, c.get("/templates/ship").Body)
		if n := strings.Count(h, `data-testid="history-item"`); n != 2 {
			t.Fatalf("%d history items, want 2:\n%s", n, h)
		}
		v2, v1 := between(h, "v2 (from v1)", "v1 (new)"), between(h, "v1 (new)", "</li>")
		for _, want := range []string{"ada", "<code>steps[1]</code>", `<span class="diff-del">-    brief: Review it`, `<span class="diff-add">+    brief: Review it twice`} {
			if !strings.Contains(v2, want) {
				t.Fatalf("the newest entry (v2, first) lacks %q:\n%s", want, h)
			}
		}
		if !strings.Contains(v1, "eve") || !strings.Contains(v1, `<span class="diff-add">+    brief: Build it`) {
			t.Fatalf("the entry of v1 lacks who or what:\n%s", v1)
		}
		// Another template's changes stay on its own page.
		if err := e.svc.Templates.SaveTemplate(ctx, eve, &models.Template{Name: "other", Steps: []models.Step{{Role: "writer", Brief: "Write"}}}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(historyOf(t, c.get("/templates/ship").Body), `data-testid="history-item"`); n != 2 {
			t.Fatalf("ship's history has %d items after another template was saved", n)
		}
	})
}
