package pages

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	tplpage "github.com/countersign/countersign/web/pages/template"
	"github.com/countersign/countersign/web/pages/templates"
)

// maxFormSteps and maxFormRows bound how far the form parser looks for indexed
// inputs, so that a crafted form cannot make it loop; Validate enforces the real limits
// (50 steps, 50 criteria, 32 held-out tests) with a field message.
const (
	maxFormSteps   = models.MaxTemplateSteps + 1
	maxFormRows    = 51
	maxImportBytes = 1 << 20
)

// agentNames maps agent ids to names for "by" columns; errors leave it empty (a
// missing name is not worth failing a page for).
func (p *Pages) agentNames(c echo.Context) map[int64]string {
	out := map[int64]string{}
	agents, err := p.svc.Store().ListAgents(c.Request().Context())
	if err != nil {
		return out
	}
	for _, a := range agents {
		out[a.ID] = a.Name
	}
	return out
}

// templatesList answers GET /templates.
func (p *Pages) templatesList(c echo.Context) error {
	list, err := p.svc.Store().ListTemplates(c.Request().Context())
	if err != nil {
		return err
	}
	names := p.agentNames(c)
	v := templates.View{Meta: p.meta(c, "Templates", layout.NavTemplates), CanEdit: models.CanEditTemplates(SignedIn(c))}
	for _, t := range list {
		v.Rows = append(v.Rows, templates.Row{Name: t.Name, Description: t.Description, Latest: t.Version,
			Steps: len(t.Steps), CreatedAt: t.CreatedAt, Creator: names[t.CreatorID]})
	}
	return render(c, http.StatusOK, templates.Page(v))
}

// templateNew answers GET /templates/new: an empty template with one step.
func (p *Pages) templateNew(c echo.Context) error {
	v := p.editorView(c, "/templates/new")
	v.New, v.Open = true, 0
	v.Form = tplpage.Form{Steps: []tplpage.StepForm{newStepForm()}}
	return render(c, http.StatusOK, tplpage.Page(v))
}

// templateShow answers GET /templates/:name: the latest version in the editor, or with
// ?version=N that version read-only.
func (p *Pages) templateShow(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	latest, err := p.svc.Store().GetTemplate(ctx, name, 0)
	if err != nil {
		return err
	}
	t := latest
	if q := c.QueryParam("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > math.MaxInt32 { // versions are 32-bit: a larger one names none
			return models.NotFound("template version", q)
		}
		if t, err = p.svc.Store().GetTemplate(ctx, name, n); err != nil {
			return err
		}
	}
	v := p.editorView(c, "/templates/"+url.PathEscape(latest.Name))
	// Held-out tests only for those who may set them (who alone may edit the form).
	v.Form = formFromTemplate(handlers.TemplateFor(SignedIn(c), t))
	v.Version, v.BaseVersion, v.Latest = t.Version, latest.Version, latest.Version
	v.ReadOnly = t.Version != latest.Version || !v.CanEdit
	if err := p.addVersions(c, &v, latest.Name); err != nil {
		return err
	}
	return render(c, http.StatusOK, tplpage.Page(v))
}

// templateYAML answers GET /templates/:name/yaml[?version=N] with the YAML file of a
// version, as text (what `countersign template import` and the import page read).
func (p *Pages) templateYAML(c echo.Context) error {
	version := 0
	if q := c.QueryParam("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > math.MaxInt32 { // versions are 32-bit: a larger one names none
			return models.NotFound("template version", q)
		}
		version = n
	}
	t, err := p.svc.Store().GetTemplate(c.Request().Context(), c.Param("name"), version)
	if err != nil {
		return err
	}
	b, err := handlers.TemplateYAML(handlers.TemplateFor(SignedIn(c), t))
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s-v%d.yaml"`, t.Name, t.Version))
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", b)
}

// templateEdit answers POST /templates/new and POST /templates/:name. The op value of
// the pressed button decides: add, remove:i, up:i, down:i, remove-criterion:i:j and
// remove-held-out:i:j re-render the form with the change and save nothing; preview:i
// re-renders it with step i's preview beside it (with the X-Template-Preview header,
// only the preview fragment, for editor.js); save validates and stores a new version.
func (p *Pages) templateEdit(c echo.Context) error {
	ctx := c.Request().Context()
	isNew := c.Param("name") == ""
	action := "/templates/new"
	var latest *models.Template
	if !isNew {
		var err error
		if latest, err = p.svc.Store().GetTemplate(ctx, c.Param("name"), 0); err != nil {
			return err
		}
		action = "/templates/" + url.PathEscape(latest.Name)
	}
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EBADREQUEST, "the form could not be read")
	}
	op := form.Get("op")
	// editor.js asks for the preview as the step is typed: the fragment alone, without
	// the versions and history the page shows.
	fragment := strings.HasPrefix(op, "preview:") && c.Request().Header.Get(tplpage.PreviewHeader) != ""
	v := p.editorView(c, action)
	v.New = isNew
	v.Form = parseTemplateForm(form)
	if latest != nil {
		v.Form.Name = latest.Name // the name of an existing template is not edited here
		v.Latest, v.Version = latest.Version, latest.Version
		v.BaseVersion, _ = strconv.Atoi(form.Get("base_version"))
		if !fragment {
			if err := p.addVersions(c, &v, latest.Name); err != nil {
				return err
			}
		}
	}

	// Whatever happens next, the page shown holds changes that are not saved.
	v.Unsaved = true
	if op != tplpage.OpSave {
		return p.templateEditOp(c, v, op, fragment)
	}

	t, fe := templateFromForm(v.Form)
	if isNew && fe["name"] == "" && strings.TrimSpace(v.Form.Name) != "" {
		_, err := p.svc.Store().GetTemplate(ctx, strings.ToLower(strings.TrimSpace(v.Form.Name)), 0)
		switch {
		case err == nil:
			fe.Add("name", "a template with this name exists: open it to save a new version")
		case models.ErrorCode(err) != models.ENOTFOUND:
			return err
		}
	}
	if len(fe) > 0 {
		// Parse errors first; what Validate says of the rest is shown too.
		if verr := t.Validate(); verr != nil {
			for k, m := range formErrorKeys(fieldErrors(verr)) {
				if _, ok := fe[k]; !ok {
					fe[k] = m
				}
			}
		}
		v.Errors = fe
		return render(c, http.StatusUnprocessableEntity, tplpage.Page(v))
	}
	if latest != nil && v.BaseVersion != latest.Version {
		v.FormError = fmt.Sprintf("Version %d was saved while you were editing version %d: nothing was saved. Open the latest version, or press Save again to save your form as version %d.",
			latest.Version, v.BaseVersion, latest.Version+1)
		v.BaseVersion = latest.Version
		return render(c, http.StatusConflict, tplpage.Page(v))
	}
	if err := p.svc.Templates.SaveTemplate(ctx, SignedIn(c), t); err != nil {
		if isInvalid(err) {
			v.Errors = formErrorKeys(fieldErrors(err))
			return render(c, http.StatusUnprocessableEntity, tplpage.Page(v))
		}
		return err
	}
	setFlash(c, components.FlashSuccess, fmt.Sprintf("Saved %s version %d.", t.Name, t.Version))
	return c.Redirect(http.StatusSeeOther, "/templates/"+url.PathEscape(t.Name))
}

// templateEditOp answers an editing operation other than saving (adding, moving or
// removing a step, previewing one): the page again, or the preview fragment alone
// when editor.js asked for it.
func (p *Pages) templateEditOp(c echo.Context, v tplpage.View, op string, fragment bool) error {
	open, err := applyOp(&v.Form, op)
	if err != nil {
		return err
	}
	v.Open = open
	if strings.HasPrefix(op, "preview:") {
		if v.Preview, err = p.previewStep(c, v.Form, open); err != nil {
			return err
		}
		if fragment {
			return render(c, http.StatusOK, tplpage.PreviewFragment(v.Preview))
		}
	}
	return render(c, http.StatusOK, tplpage.Page(v))
}

// templateImportForm answers GET /templates/import; for an agent who may not save
// templates, 403 with the form and the reason.
func (p *Pages) templateImportForm(c echo.Context) error {
	v := p.importView(c)
	if v.Refused != "" {
		return render(c, http.StatusForbidden, templates.Import(v))
	}
	return render(c, http.StatusOK, templates.Import(v))
}

// templateImport answers POST /templates/import: parse the YAML (or JSON), take the
// name from the form when given, and save it as the next version of that name.
func (p *Pages) templateImport(c echo.Context) error {
	v := p.importView(c)
	v.Name, v.YAML = strings.TrimSpace(c.FormValue("name")), c.FormValue("yaml")
	v.Errors = map[string]string{}
	fail := func() error { return render(c, http.StatusUnprocessableEntity, templates.Import(v)) }
	if v.Refused != "" { // the pasted text is kept, with the reason, not a bare error page
		return render(c, http.StatusForbidden, templates.Import(v))
	}
	if strings.TrimSpace(v.YAML) == "" {
		v.Errors["yaml"] = "paste a template"
		return fail()
	}
	if len(v.YAML) > maxImportBytes {
		v.Errors["yaml"] = "the template is larger than 1 MiB"
		return fail()
	}
	t, err := models.ParseTemplate([]byte(v.YAML))
	if err == nil {
		err = models.CheckText(t) // a YAML "\0" escape: text no database may hold
	}
	if err != nil {
		var de *models.Error
		if !errors.As(err, &de) {
			return err
		}
		v.Errors["yaml"] = de.Message
		v.Details = detailLines(de.Fields)
		return fail()
	}
	if v.Name != "" {
		t.Name = v.Name
	}
	if strings.TrimSpace(t.Name) == "" {
		v.Errors["name"] = "is required: the document has no name"
		return fail()
	}
	t.Version = 0
	if err := p.svc.Templates.SaveTemplate(c.Request().Context(), SignedIn(c), t); err != nil {
		var de *models.Error
		if models.ErrorCode(err) == models.EFORBIDDEN && errors.As(err, &de) {
			v.Refused = de.Message
			return render(c, http.StatusForbidden, templates.Import(v))
		}
		if !isInvalid(err) {
			return err
		}
		fields := fieldErrors(err)
		if m, ok := fields["name"]; ok {
			v.Errors["name"] = m
			delete(fields, "name")
		}
		if len(fields) > 0 {
			v.Errors["yaml"] = "the template is not valid"
			v.Details = detailLines(fields)
		}
		return fail()
	}
	setFlash(c, components.FlashSuccess, fmt.Sprintf("Imported %s as version %d.", t.Name, t.Version))
	return c.Redirect(http.StatusSeeOther, "/templates/"+url.PathEscape(t.Name))
}

func (p *Pages) importView(c echo.Context) templates.ImportView {
	v := templates.ImportView{Meta: p.meta(c, "Import a template", layout.NavTemplates), CSRF: CSRFToken(c)}
	if !models.CanEditTemplates(SignedIn(c)) {
		v.Refused = "Only an editor, lead or admin may import a template: nothing was saved. Ask one of them, or copy your text from here."
	}
	return v
}

// detailLines lists field messages as "field: message", sorted by field.
func detailLines(fields map[string]string) []string {
	out := make([]string, 0, len(fields))
	for k, m := range fields {
		out = append(out, k+": "+m)
	}
	sort.Strings(out)
	return out
}

func (p *Pages) editorView(c echo.Context, action string) tplpage.View {
	a := SignedIn(c)
	title := "New template"
	if n := c.Param("name"); n != "" {
		title = n
	}
	return tplpage.View{Meta: p.meta(c, title, layout.NavTemplates), CSRF: CSRFToken(c), Action: action,
		CanEdit: models.CanEditTemplates(a), Open: -1}
}

// addVersions adds the versions of template name and its history to v.
func (p *Pages) addVersions(c echo.Context, v *tplpage.View, name string) error {
	vs, err := p.svc.Store().ListTemplateVersions(c.Request().Context(), name)
	if err != nil {
		return err
	}
	hist, err := p.svc.Templates.TemplateHistory(c.Request().Context(), name, historyLimit)
	if err != nil {
		return err
	}
	v.History = historyItems(hist, templateChangeLabel)
	// A change's diff is the YAML of both versions: held-out tests only for those who
	// may read them.
	diffs := handlers.NewTemplateChangeDiffs(p.svc.Store(), SignedIn(c))
	for i, h := range hist {
		if v.History[i].Diff != "" && diffs.Hides(c.Request().Context(), h.Change.Name, h.Change.FromVersion, h.Change.Version) {
			v.History[i].Diff = ""
			v.History[i].DiffHidden = "Diff hidden: the template carries held-out tests, which only leads, admins and editors read."
		}
	}
	names := p.agentNames(c)
	sort.Slice(vs, func(i, j int) bool { return vs[i].Version > vs[j].Version })
	for _, t := range vs {
		v.Versions = append(v.Versions, tplpage.VersionRow{Version: t.Version, Steps: len(t.Steps), Creator: names[t.CreatorID], CreatedAt: t.CreatedAt})
	}
	return nil
}

func newStepForm() tplpage.StepForm {
	return tplpage.StepForm{Completion: map[string]string{"completion.type": string(contract.CompletionFile)},
		Verification: contract.FormData{Values: map[string]string{verificationTypeInput: string(contract.VerifyAuto)}}}
}

// verificationTypeInput is the verification type's input: a step shows auto, the
// type an empty one stands for, rather than no choice.
const verificationTypeInput = "verification.type"

// opRE reads an op: remove-<item>:i:j removes row j of a rows input of step i (the
// item names it: tplpage.OpRemoveRow).
var opRE = regexp.MustCompile(`^(add|remove|up|down|preview|remove-[a-z-]+):?(\d*):?(\d*)$`)

// applyOp changes the form as the pressed button asks and returns the step to show
// expanded afterwards (-1: none): the added or moved step, the step edited. An op
// naming a step or criterion that does not exist is a bad request (a stale or
// crafted form). preview:i changes nothing and opens step i.
func applyOp(f *tplpage.Form, op string) (int, error) {
	m := opRE.FindStringSubmatch(op)
	bad := models.Errorf(models.EBADREQUEST, "unknown editor action %q", op)
	if m == nil {
		return -1, bad
	}
	i, errI := strconv.Atoi(m[2])
	j, errJ := strconv.Atoi(m[3])
	steps := f.Steps
	inRange := errI == nil && i >= 0 && i < len(steps)
	switch {
	case m[1] == "add" && m[2] == "":
		if len(steps) >= models.MaxTemplateSteps {
			return -1, models.Errorf(models.EBADREQUEST, "a template has at most %d steps", models.MaxTemplateSteps)
		}
		f.Steps = append(steps, newStepForm())
		return len(f.Steps) - 1, nil
	case m[1] == "remove" && inRange && m[3] == "":
		f.Steps = slices.Delete(steps, i, i+1)
		return -1, nil
	case m[1] == "up" && inRange && i > 0 && m[3] == "":
		steps[i-1], steps[i] = steps[i], steps[i-1]
		return i - 1, nil
	case m[1] == "down" && inRange && i < len(steps)-1 && m[3] == "":
		steps[i+1], steps[i] = steps[i], steps[i+1]
		return i + 1, nil
	case m[1] == "preview" && inRange && m[3] == "":
		return i, nil
	case strings.HasPrefix(m[1], "remove-") && inRange && errJ == nil:
		for _, rf := range contract.VerificationFormFields() {
			rows := steps[i].Verification.Rows[rf.Name]
			if rf.Kind == contract.FormRows && m[1] == "remove-"+rf.Item && j >= 0 && j < len(rows) {
				steps[i].Verification.Rows[rf.Name] = slices.Delete(rows, j, j+1)
				return i, nil
			}
		}
	}
	return -1, bad
}

// parseTemplateForm reads the editor's inputs as typed. Steps are read while
// steps[i].role is present; blank criterion and held-out rows are dropped.
func parseTemplateForm(form url.Values) tplpage.Form {
	f := tplpage.Form{Name: strings.TrimSpace(form.Get("name")), Description: form.Get("description")}
	for i := 0; i < maxFormSteps; i++ {
		g := func(field string) string { return form.Get(tplpage.StepField(i, field)) }
		if _, ok := form[tplpage.StepField(i, "role")]; !ok {
			break
		}
		s := tplpage.StepForm{
			Name: g("name"), Role: g("role"), Brief: g("brief"), Approve: g("approve"), Verify: g("verify"),
			Completion: map[string]string{}, Review: map[string]string{}, Parallel: strings.TrimSpace(g("parallel")),
		}
		for _, cf := range contract.CompletionFormFields() {
			s.Completion[cf.Name] = g(cf.Name)
		}
		for _, rf := range contract.ReviewFormFields() {
			s.Review[rf.Name] = g(rf.Name)
		}
		s.Verification = parseVerificationForm(form, i)
		f.Steps = append(f.Steps, s)
	}
	return f
}

// parseVerificationForm reads the verification inputs of step i as typed
// (contract.VerificationFormFields): the rows of a rows input while the first input
// of row j is present, blank rows dropped so that the rows left are numbered as
// Validate numbers them.
func parseVerificationForm(form url.Values, i int) contract.FormData {
	d := contract.FormData{Values: map[string]string{}, Rows: map[string][]contract.FormRow{}}
	for _, f := range contract.VerificationFormFields() {
		if f.Kind != contract.FormRows {
			d.Values[f.Name] = form.Get(tplpage.StepField(i, f.Name))
			continue
		}
		for j := 0; j < maxFormRows; j++ {
			if _, ok := form[tplpage.RowField(i, f, j, f.Row[0])]; !ok {
				break
			}
			row := contract.FormRow{}
			for _, r := range f.Row {
				row[r.Name] = form.Get(tplpage.RowField(i, f, j, r))
			}
			if !row.Blank() {
				d.Rows[f.Name] = append(d.Rows[f.Name], row)
			}
		}
	}
	return d
}

// templateFromForm converts the form to a template, with a field message for every
// value that does not parse (the contract's, as its codec reads them). The template is built from what did parse,
// so Validate can still report the rest.
func templateFromForm(f tplpage.Form) (*models.Template, models.FieldErrors) {
	fe := models.FieldErrors{}
	t := &models.Template{Name: f.Name, Description: f.Description}
	for i, s := range f.Steps {
		key := func(field string) string { return tplpage.StepField(i, field) }
		st := models.Step{Name: s.Name, Role: s.Role, Brief: s.Brief, Approve: s.Approve, Verify: s.Verify, Parallel: s.Parallel}
		// The completion, the verification and the review are read by the contract's
		// codec, as a YAML file's would be (contract.CompletionFromForm).
		cp, cfe := contract.CompletionFromForm(s.Completion)
		st.Completion = cp
		for k, m := range cfe {
			fe.Add(key(k), m)
		}
		vf, vfe := contract.VerificationFromForm(s.Verification)
		st.Verification = vf
		for k, m := range vfe {
			fe.Add(key(k), m)
		}
		r, rfe := contract.ReviewFromForm(s.Review)
		st.Review = r
		for k, m := range rfe {
			fe.Add(key(k), m)
		}
		t.Steps = append(t.Steps, st)
	}
	return t, fe
}

var indexSuffixRE = regexp.MustCompile(`^(steps\[\d+\]\.(?:completion\.verify|review\.when|verification\.protect))\[(\d+)\]$`)

// formErrorKeys maps Validate's keys to the editor's input names: the message of one
// verify command (steps[0].completion.verify[2]), protected path or review trigger
// goes to the textarea or input holding the list, naming the line or item.
func formErrorKeys(fields map[string]string) map[string]string {
	out := make(map[string]string, len(fields))
	for k, m := range fields {
		if g := indexSuffixRE.FindStringSubmatch(k); g != nil {
			n, _ := strconv.Atoi(g[2])
			what := "line"
			if strings.HasSuffix(g[1], "when") {
				what = "item"
			}
			m = fmt.Sprintf("%s %d: %s", what, n+1, m)
			if _, dup := out[g[1]]; dup {
				continue
			}
			k = g[1]
		}
		out[k] = m
	}
	return out
}

// formFromTemplate shows a stored template in the form.
func formFromTemplate(t *models.Template) tplpage.Form {
	f := tplpage.Form{Name: t.Name, Description: t.Description}
	for _, st := range t.Steps {
		s := tplpage.StepForm{Name: st.Name, Role: st.Role, Brief: st.Brief, Approve: st.Approve, Verify: st.Verify,
			Completion: st.Completion.FormValues(), Verification: st.Verification.FormData()}
		if s.Verification.Values[verificationTypeInput] == "" {
			s.Verification.Values[verificationTypeInput] = string(contract.VerifyAuto)
		}
		s.HeldOutHidden = st.Verification.HeldOutCount
		s.Review = st.Review.FormValues()
		s.Parallel = st.Parallel
		f.Steps = append(f.Steps, s)
	}
	return f
}
