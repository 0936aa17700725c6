package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// editorOp submits the form of page (posting to action) with values changed and the
// button op pressed.
func editorOp(t *testing.T, c *admClient, page admResp, action string, set map[string]string, op string) admResp {
	t.Helper()
	v := formValues(t, page.Body, action)
	for k, val := range set {
		v.Set(k, val)
	}
	v.Set("op", op)
	return c.post(action, v)
}

func stepRoles(t *testing.T, body string) []string {
	t.Helper()
	var roles []string
	for i := 0; ; i++ {
		name := `name="steps[` + strconv.Itoa(i) + `].role" type="text" value="`
		k := strings.Index(body, name)
		if k < 0 {
			return roles
		}
		rest := body[k+len(name):]
		roles = append(roles, rest[:strings.IndexByte(rest, '"')])
	}
}

func TestTemplateEditorRoundTrip(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	c := e.login("eve")
	ctx := context.Background()

	page := c.get("/templates/new")
	page.want(t, http.StatusOK, `data-testid="template-form"`, `name="steps[0].role"`)

	// Add a step: the form comes back with two steps, nothing saved.
	page = editorOp(t, c, page, "/templates/new", map[string]string{
		"name": "feature-flow", "steps[0].role": "developer", "steps[0].brief": "Build the toggle",
		"steps[0].completion.path": "{task_id}/out.md",
	}, "add")
	page.want(t, http.StatusOK, `data-testid="step-1"`)
	if got := stepRoles(t, page.Body); len(got) != 2 || got[0] != "developer" || got[1] != "" {
		t.Fatalf("after add: roles %q", got)
	}
	if list, _ := e.db.ListTemplates(ctx); len(list) != 0 {
		t.Fatalf("add saved something: %v", list)
	}

	// Fill the second step, then move it up, down, and remove it.
	page = editorOp(t, c, page, "/templates/new", map[string]string{
		"steps[1].role": "reviewer", "steps[1].brief": "Review the toggle", "steps[1].completion.type": "none",
	}, "up:1")
	if got := stepRoles(t, page.Body); strings.Join(got, ",") != "reviewer,developer" {
		t.Fatalf("after up:1: %q", got)
	}
	page = editorOp(t, c, page, "/templates/new", nil, "down:0")
	if got := stepRoles(t, page.Body); strings.Join(got, ",") != "developer,reviewer" {
		t.Fatalf("after down:0: %q", got)
	}
	removed := editorOp(t, c, page, "/templates/new", nil, "remove:1")
	if got := stepRoles(t, removed.Body); strings.Join(got, ",") != "developer" {
		t.Fatalf("after remove:1: %q", got)
	}
	// A stale or crafted op is refused.
	editorOp(t, c, page, "/templates/new", nil, "remove:7").want(t, http.StatusBadRequest)

	saveEveryField(t, e, c, page)
	// The flash says so on the page the redirect leads to.
	page = c.get("/templates/feature-flow")
	page.want(t, http.StatusOK, "Saved feature-flow version 1", `value="go test ./web/..."`, "Editing version 1")

	refusedTemplateSaves(t, e, c, page)
	// Remove a criterion with its button, fix, save: version 2.
	page = editorOp(t, c, page, "/templates/feature-flow", nil, "remove-criterion:0:0")
	page.want(t, http.StatusOK)
	if strings.Contains(page.Body, `value="go test ./web/..."`) {
		t.Fatal("criterion not removed")
	}
	editorOp(t, c, page, "/templates/feature-flow", map[string]string{"steps[0].verification.type": "auto"}, "save").want(t, http.StatusSeeOther)
	v2, _ := e.db.GetTemplate(ctx, "feature-flow", 0)
	if v2.Version != 2 || len(v2.Steps[0].Verification.Criteria) != 0 {
		t.Fatalf("version 2: %+v", v2)
	}

	// A form started from version 1 cannot silently overwrite version 2.
	stale := editorOp(t, c, page, "/templates/feature-flow", map[string]string{"base_version": "1"}, "save")
	stale.want(t, http.StatusConflict, "was saved while you were editing")

	page = templateVersionsAndYAML(t, c)
	// A developer sees the editor read-only and cannot save.
	d := e.login("dev")
	dp := d.get("/templates/feature-flow")
	dp.want(t, http.StatusOK, "Only leads, admins and editors")
	if strings.Contains(dp.Body, `data-testid="op-save"`) {
		t.Fatal("a developer sees the save button")
	}
	editorOp(t, d, page, "/templates/feature-flow", nil, "save").want(t, http.StatusForbidden)

	// Without the CSRF token nothing is accepted.
	d.csrf = ""
	d.post("/templates/feature-flow", url.Values{"op": {"add"}}).want(t, http.StatusForbidden)
}

// saveEveryField sets every contract field of step 0 and a review on step 1, saves,
// and checks that version 1 stores each.
func saveEveryField(t *testing.T, e *admEnv, c *admClient, page admResp) {
	t.Helper()
	ctx := context.Background()
	// Every contract field of step 0, then save.
	res := editorOp(t, c, page, "/templates/new", map[string]string{
		"description":                                   "Build, then review",
		"steps[0].name":                                 "Build",
		"steps[0].approve":                              "runner",
		"steps[0].verify":                               "lead",
		"steps[0].completion.type":                      "file",
		"steps[0].completion.min_length":                "100",
		"steps[0].completion.done_token":                "TASK_COMPLETE",
		"steps[0].completion.verify":                    "go test ./...\r\n\r\ngo vet ./...",
		"steps[0].completion.verify_timeout":            "2m",
		"steps[0].completion.evaluate":                  "Must address every criterion.",
		"steps[0].completion.max_attempts":              "3",
		"steps[0].completion.timeout":                   "45m",
		"steps[0].completion.cooldown":                  "10s",
		"steps[0].completion.clean":                     "on",
		"steps[0].completion.checklist.path":            "TODO.md",
		"steps[0].completion.checklist.count":           "2",
		"steps[0].verification.type":                    "verifiable",
		"steps[0].verification.criteria[0].activity":    "unit-test",
		"steps[0].verification.criteria[0].description": "Toggle renders",
		"steps[0].verification.criteria[0].pattern":     "DarkModeToggle",
		"steps[0].verification.criteria[0].timing":      "immediate",
		"steps[0].verification.criteria[0].command":     "go test ./web/...",
		"steps[1].review.role":                          "reviewer",
		"steps[1].review.when":                          "always, final",
		"steps[1].review.max_rounds":                    "2",
	}, "save")
	res.want(t, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/templates/feature-flow" {
		t.Fatalf("save redirected to %q", loc)
	}
	tpl, err := e.db.GetTemplate(ctx, "feature-flow", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Version != 1 || len(tpl.Steps) != 2 {
		t.Fatalf("saved %+v", tpl)
	}
	s0, s1 := tpl.Steps[0], tpl.Steps[1]
	cp := s0.Completion
	if s0.Name != "Build" || s0.Verify != "lead" || cp.Path != "{task_id}/out.md" || cp.MinLength != 100 ||
		cp.DoneToken != "TASK_COMPLETE" || strings.Join(cp.Verify, "|") != "go test ./...|go vet ./..." ||
		cp.VerifyTimeout.Duration != 2*time.Minute || cp.MaxAttempts != 3 || cp.Timeout.Duration != 45*time.Minute ||
		cp.Cooldown.Duration != 10*time.Second || !cp.Clean || cp.Checklist == nil || cp.Checklist.Count != 2 {
		t.Fatalf("step 0 completion %+v", cp)
	}
	if v := s0.Verification; v.Type != contract.VerifyVerifiable || len(v.Criteria) != 1 || v.Criteria[0].Command != "go test ./web/..." || v.Criteria[0].Timing != "immediate" {
		t.Fatalf("step 0 verification %+v", v)
	}
	if s1.Review == nil || s1.Review.Role != "reviewer" || strings.Join(s1.Review.When, ",") != "always,final" || s1.Review.MaxRounds != 2 {
		t.Fatalf("step 1 review %+v", s1.Review)
	}
}

// refusedTemplateSaves checks the saves refused beside their field (a taken name, a
// path out of the workspace, numbers and durations that do not parse, a criterion
// without a description), nothing stored.
func refusedTemplateSaves(t *testing.T, e *admEnv, c *admClient, page admResp) {
	t.Helper()
	ctx := context.Background()
	// Saving under an existing name from /templates/new is refused beside the name.
	dup := c.get("/templates/new")
	editorOp(t, c, dup, "/templates/new", map[string]string{"name": "feature-flow", "steps[0].role": "dev", "steps[0].brief": "x"}, "save").
		want(t, http.StatusUnprocessableEntity, `data-testid="name-error"`, "a template with this name exists")

	// A path leading out of the workspace: 422, the message beside step 1's path.
	bad := editorOp(t, c, page, "/templates/feature-flow", map[string]string{"steps[1].completion.type": "file", "steps[1].completion.path": "../../etc/passwd"}, "save")
	bad.want(t, http.StatusUnprocessableEntity, `value="../../etc/passwd"`)
	assertFieldError(t, bad.Body, "steps[1].completion.path", "must stay inside the task workspace")
	if strings.Contains(bad.Body, `data-testid="steps[0].completion.path-error"`) {
		t.Fatal("the error was shown beside step 0's path too")
	}

	// Numbers and durations that do not parse are named.
	bad2 := editorOp(t, c, page, "/templates/feature-flow", map[string]string{"steps[0].completion.timeout": "soon", "steps[0].completion.min_length": "lots"}, "save")
	bad2.want(t, http.StatusUnprocessableEntity, `value="soon"`)
	assertFieldError(t, bad2.Body, "steps[0].completion.timeout", "not a duration like 30m")
	assertFieldError(t, bad2.Body, "steps[0].completion.min_length", "not a whole number")
	// A budget typed as 0 is refused, beside its field (left empty, it is the default).
	bad0 := editorOp(t, c, page, "/templates/feature-flow", map[string]string{"steps[0].completion.max_attempts": "0"}, "save")
	bad0.want(t, http.StatusUnprocessableEntity)
	assertFieldError(t, bad0.Body, "steps[0].completion.max_attempts", "must be at least 1")

	// An empty verify line in the middle is dropped; a bad criterion row is named.
	bad3 := editorOp(t, c, page, "/templates/feature-flow", map[string]string{"steps[0].verification.criteria[0].description": ""}, "save")
	assertFieldError(t, bad3.Body, "steps[0].verification.criteria[0].description", "is required")
	if v, _ := e.db.GetTemplate(ctx, "feature-flow", 0); v.Version != 1 {
		t.Fatalf("a refused save stored version %d", v.Version)
	}
}

// templateVersionsAndYAML checks that older versions are read-only and linked, that
// the list shows the latest, and that the YAML view round-trips; it returns the
// latest version's page.
func templateVersionsAndYAML(t *testing.T, c *admClient) admResp {
	t.Helper()
	// Older versions are read-only and linked from the versions list.
	page := c.get("/templates/feature-flow")
	page.want(t, http.StatusOK, `href="/templates/feature-flow?version=1"`, `data-testid="version-2"`)
	old := c.get("/templates/feature-flow?version=1")
	old.want(t, http.StatusOK, "read-only", `value="go test ./web/..."`)
	if strings.Contains(old.Body, `data-testid="op-save"`) || strings.Contains(old.Body, `value="add"`) {
		t.Fatal("an old version shows editing buttons")
	}
	c.get("/templates/feature-flow?version=9").want(t, http.StatusNotFound)
	c.get("/templates/nosuch").want(t, http.StatusNotFound)

	// The list.
	c.get("/templates").want(t, http.StatusOK, `href="/templates/feature-flow"`, "v2")

	// YAML view round-trips.
	y := c.get("/templates/feature-flow/yaml?version=1")
	y.want(t, http.StatusOK, "name: feature-flow", "DarkModeToggle")
	if ct := y.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("yaml content type %q", ct)
	}
	back, err := models.ParseTemplate([]byte(y.Body))
	if err != nil || len(back.Steps) != 2 || back.Steps[0].Completion.Checklist.Path != "TODO.md" {
		t.Fatalf("yaml does not parse back: %v %+v", err, back)
	}
	return page
}

// assertFieldError fails unless the error element of input name holds msg and sits
// right after that input (beside the field, not in a summary).
func assertFieldError(t *testing.T, body, name, msg string) {
	t.Helper()
	errID := `data-testid="` + name + `-error">`
	k := strings.Index(body, errID)
	if k < 0 {
		t.Fatalf("no error element for %s:\n%s", name, excerpt(body))
	}
	got := body[k+len(errID):]
	if got = unescape(got[:strings.Index(got, "<")]); !strings.Contains(got, msg) {
		t.Fatalf("error of %s is %q, want %q", name, got, msg)
	}
	in := strings.LastIndex(body[:k], `name="`+name+`"`)
	if in < 0 || strings.Contains(body[in:k], `class="field"`) {
		t.Fatalf("the error of %s is not beside its input", name)
	}
}

func TestTemplateImport(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	c := e.login("eve")
	c.get("/templates/import").want(t, http.StatusOK, `data-testid="import-form"`)

	valid := `name: seeded
steps:
  - role: developer
    brief: Implement the thing
    completion:
      path: "{task_id}/output.md"
      min_length: 10
      verify: "go test ./..."
      max_iterations: 3
`
	r := c.post("/templates/import", url.Values{"yaml": {valid}})
	r.want(t, http.StatusSeeOther)
	if r.Header.Get("Location") != "/templates/seeded" {
		t.Fatalf("import redirected to %q", r.Header.Get("Location"))
	}
	tpl, err := e.db.GetTemplate(context.Background(), "seeded", 0)
	if err != nil || tpl.Steps[0].Completion.MaxAttempts != 3 {
		t.Fatalf("imported %+v, %v", tpl, err)
	}
	c.get("/templates/seeded").want(t, http.StatusOK, "Imported seeded as version 1")

	// A bare steps: document takes the name from the form, or asks for one.
	bare := "steps:\n  - role: developer\n    brief: Do it\n"
	c.post("/templates/import", url.Values{"yaml": {bare}}).want(t, http.StatusUnprocessableEntity, `data-testid="name-error"`, "the document has no name")
	c.post("/templates/import", url.Values{"yaml": {bare}, "name": {"bare-flow"}}).want(t, http.StatusSeeOther)

	// Syntax errors carry the line.
	broken := "name: x\nsteps:\n  - role: developer\n    brief: [unclosed\n"
	res := c.post("/templates/import", url.Values{"yaml": {broken}})
	res.want(t, http.StatusUnprocessableEntity, `data-testid="yaml-error"`, "line ")
	if !strings.Contains(res.Body, "unclosed") {
		t.Fatal("the typed YAML is not shown back")
	}
	// Unknown fields are named by path.
	c.post("/templates/import", url.Values{"yaml": {"name: x\nsteps:\n  - role: dev\n    brief: b\n    completion:\n      colour: red\n"}}).
		want(t, http.StatusUnprocessableEntity, "steps[0].completion.colour")
	// Validation errors are listed by path.
	c.post("/templates/import", url.Values{"yaml": {"name: x\nsteps:\n  - role: dev\n    brief: b\n    completion:\n      path: /etc/passwd\n"}}).
		want(t, http.StatusUnprocessableEntity, `data-testid="import-details"`, "steps[0].completion.path: must be relative to the task workspace")
	if _, err := e.db.GetTemplate(context.Background(), "x", 0); models.ErrorCode(err) != models.ENOTFOUND {
		t.Fatalf("an invalid import was saved: %v", err)
	}
}
