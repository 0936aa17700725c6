package pages_test

import (
	"context"
	"net/http"
	"testing"
)

// TestTemplateEditorDependenciesMayChange: an editor lets a step's dependencies
// change in the form; it is saved, shown back checked, and kept when the form is saved
// again as it is.
func TestTemplateEditorDependenciesMayChange(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	c := e.login("eve")
	page := c.get("/templates/new")
	page.want(t, http.StatusOK, `name="steps[0].verification.dependencies_may_change"`)
	editorOp(t, c, page, "/templates/new", map[string]string{
		"name": "deps", "steps[0].role": "developer", "steps[0].brief": "Add a YAML parser", "steps[0].completion.type": "none",
		"steps[0].verification.type":                 "verifiable",
		"steps[0].verification.criteria[0].activity": "unit-test", "steps[0].verification.criteria[0].description": "tests pass",
		"steps[0].verification.dependencies_may_change": "on",
	}, "save").want(t, http.StatusSeeOther)
	tpl, err := e.db.GetTemplate(ctx, "deps", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v := tpl.Steps[0].Verification; !v.DependenciesMayChange || v.TestsMayChange {
		t.Fatalf("saved verification %+v", v)
	}
	page = c.get("/templates/deps")
	editorOp(t, c, page, "/templates/deps", nil, "save").want(t, http.StatusSeeOther)
	if tpl, _ = e.db.GetTemplate(ctx, "deps", 0); tpl.Version != 2 || !tpl.Steps[0].Verification.DependenciesMayChange {
		t.Fatalf("saving the form again lost dependencies_may_change: v%d %+v", tpl.Version, tpl.Steps[0].Verification)
	}
}
