package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestImportOnlyForEditors: an exec is not offered "Import YAML" on the templates
// list or a template's page (an editor is); opening the import form anyway answers
// 403 with the reason, and a refused import re-renders the form with the pasted text
// kept and the reason (403), not a bare error page; nothing is saved.
func TestImportOnlyForEditors(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	e.human("xena", models.RoleExec)
	tpl := &models.Template{Name: "flow", Steps: []models.Step{{Role: "developer", Brief: "Do it"}}}
	if err := e.svc.Templates.SaveTemplate(context.Background(), models.System, tpl); err != nil {
		t.Fatal(err)
	}
	exec, editor := e.login("xena"), e.login("eve")
	for _, path := range []string{"/templates", "/templates/flow"} {
		if body := exec.get(path).Body; strings.Contains(body, "/templates/import") {
			t.Errorf("the exec is offered Import YAML on %s", path)
		}
		if body := editor.get(path).Body; !strings.Contains(body, `href="/templates/import"`) {
			t.Errorf("the editor is not offered Import YAML on %s", path)
		}
	}
	exec.get("/templates/import").want(t, http.StatusForbidden, `data-testid="import-refused"`, "Only an editor, lead or admin")
	pasted := "name: mine\nsteps:\n  - role: developer\n    brief: Keep <this> text\n"
	r := exec.post("/templates/import", url.Values{"yaml": {pasted}})
	r.want(t, http.StatusForbidden, `data-testid="import-form"`, `data-testid="import-refused"`, "brief: Keep &lt;this&gt; text")
	if _, err := e.db.GetTemplate(context.Background(), "mine", 0); models.ErrorCode(err) != models.ENOTFOUND {
		t.Fatalf("a refused import saved a template: %v", err)
	}
	// An invalid import by an editor keeps the text too (422).
	editor.post("/templates/import", url.Values{"yaml": {"name: x\nsteps: [unclosed\n"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="yaml-error"`, "steps: [unclosed")
}
