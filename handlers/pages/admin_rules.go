package pages

import (
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/rules"
)

// maxRuleRows bounds how far the form parser looks for indexed rows.
const maxRuleRows = 250

// rulesForm answers GET /rules with the saved rules (or the defaults).
func (p *Pages) rulesForm(c echo.Context) error {
	v, err := p.rulesView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, rules.Page(v))
}

func (p *Pages) rulesView(c echo.Context) (rules.View, error) {
	v, _, err := p.rulesViewOf(c)
	return v, err
}

// rulesViewOf is rulesView with the rules it shows (the saved ones or the defaults).
func (p *Pages) rulesViewOf(c echo.Context) (rules.View, *models.ProjectRules, error) {
	v := rules.View{Meta: p.meta(c, "Rules", layout.NavRules), CSRF: CSRFToken(c), CanEdit: models.CanEditTemplates(SignedIn(c))}
	r, err := p.svc.Store().GetRules(c.Request().Context())
	switch {
	case models.ErrorCode(err) == models.ENOTFOUND:
		def := models.DefaultRules()
		r, v.Defaults = &def, true
	case err != nil:
		return v, nil, err
	default:
		v.UpdatedAt = r.UpdatedAt
	}
	v.Form = formFromRules(*r)
	v.Stacks = stackViews(r.Stacks)
	hist, err := p.svc.Templates.RulesHistory(c.Request().Context(), historyLimit)
	if err != nil {
		return v, nil, err
	}
	v.History = historyItems(hist, rulesChangeLabel)
	return v, r, nil
}

// rulesSave answers POST /rules. Each section of the page is its own form posting
// section=<id>: only the fields of the sections named are read from the form and
// saved, the others stay as they are stored (a post naming no section saves them
// all). A refused save (422) shows the posted sections as typed, the others as
// stored, each error in its section.
func (p *Pages) rulesSave(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EBADREQUEST, "the form could not be read")
	}
	v, stored, err := p.rulesViewOf(c)
	if err != nil {
		return err
	}
	secs, err := rulesSections(form["section"])
	if err != nil {
		return err
	}
	posted := parseRulesForm(form)
	copySections(&v.Form, posted, secs)
	typed, fe := rulesFromForm(posted)
	for k := range fe {
		if !slices.ContainsFunc(secs, func(s rules.Section) bool { return s.ID == rules.SectionOf(k) }) {
			delete(fe, k) // an input of a section not saved
		}
	}
	r := *stored
	copySections(&r, typed, secs)
	if len(fe) == 0 {
		err := p.svc.Templates.SaveRules(c.Request().Context(), SignedIn(c), &r)
		if err == nil {
			setFlash(c, components.FlashSuccess, rulesSavedMessage(secs))
			return c.Redirect(http.StatusSeeOther, "/rules")
		}
		if !isInvalid(err) {
			return err
		}
		fe = models.FieldErrors(fieldErrors(err))
	} else if verr := r.Validate(); verr != nil {
		for k, m := range fieldErrors(verr) {
			fe.Add(k, m)
		}
	}
	v.Errors = rulesErrorKeys(v.Form, fe)
	return render(c, http.StatusUnprocessableEntity, rules.Page(v))
}

// rulesSections returns the sections named by the form's section values, every
// section when it names none; an unknown name is a bad request.
func rulesSections(ids []string) ([]rules.Section, error) {
	if len(ids) == 0 {
		return rules.Sections, nil
	}
	var out []rules.Section
	for _, s := range rules.Sections {
		if slices.Contains(ids, s.ID) {
			out = append(out, s)
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(out, func(s rules.Section) bool { return s.ID == id }) {
			return nil, models.Errorf(models.EBADREQUEST, "no section %q of the rules", id)
		}
	}
	return out, nil
}

// copySections sets the fields of the given sections of *dst to src's: dst and src
// are both a rules.Form or both a models.ProjectRules, whose fields have the names
// rules.Section.Fields lists.
func copySections[T any](dst *T, src T, secs []rules.Section) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for _, sec := range secs {
		for _, f := range sec.Fields {
			d.FieldByName(f).Set(s.FieldByName(f))
		}
	}
}

// rulesSavedMessage is the flash after a save of secs.
func rulesSavedMessage(secs []rules.Section) string {
	if len(secs) != 1 {
		return "Saved the project rules."
	}
	return "Saved the project rules' " + strings.ToLower(secs[0].Title) + "; the other sections are unchanged."
}

// rulesTry answers POST /rules/try: the verification contract the saved rules
// generate for the described task, exactly as task creation resolves an auto contract.
func (p *Pages) rulesTry(c echo.Context) error {
	v, err := p.rulesView(c)
	if err != nil {
		return err
	}
	v.Try = rules.TryForm{Title: c.FormValue("title"), Description: c.FormValue("description"), Files: c.FormValue("files")}
	saved, err := p.svc.Templates.Rules(c.Request().Context())
	if err != nil {
		return err
	}
	files := splitList(v.Try.Files)
	ct := contract.ResolveContract(contract.Contract{Verification: contract.Verification{Type: contract.VerifyAuto}},
		v.Try.Title, v.Try.Description, files, saved.Rules, time.Now())
	res := &rules.TryResult{Type: string(ct.Verification.Type), Pending: ct.Verification.Workspace != ""}
	seen := map[string]bool{}
	for _, f := range append(files, contract.ExtractFiles(v.Try.Title+"\n"+v.Try.Description)...) {
		if !seen[f] {
			seen[f] = true
			res.Files = append(res.Files, f)
		}
	}
	for _, cr := range ct.Verification.Criteria {
		cmd := cr.Command
		if cmd == "" {
			cmd = saved.Activities[cr.Activity]
		}
		res.Criteria = append(res.Criteria, rules.TryCriterion{Activity: cr.Activity, Description: cr.Description,
			Pattern: cr.Pattern, Timing: cr.Timing, Command: cmd})
	}
	v.Result = res
	return render(c, http.StatusOK, rules.Page(v))
}

// splitList splits text on newlines and commas, trimming and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func parseRulesForm(form url.Values) rules.Form {
	f := rules.Form{Always: form.Get("always"), AdvisoryWords: form.Get("advisory_words"), SkipWords: form.Get("skip_words"),
		Stacks: form.Get("stacks"), Prices: form.Get("prices"), PromptForAdvisory: form.Get("prompt_for_advisory") != ""}
	f.Hats = parseHatRows(form)
	for i := 0; i < maxRuleRows; i++ {
		if _, ok := form[rules.ActivityField(i, "name")]; !ok {
			break
		}
		r := rules.ActivityRow{Name: strings.TrimSpace(form.Get(rules.ActivityField(i, "name"))), Command: form.Get(rules.ActivityField(i, "command"))}
		if r.Name != "" || strings.TrimSpace(r.Command) != "" {
			f.Activities = append(f.Activities, r)
		}
	}
	for i := 0; i < maxRuleRows; i++ {
		if _, ok := form[rules.PatternField(i, "pattern")]; !ok {
			break
		}
		r := rules.PatternRow{Pattern: strings.TrimSpace(form.Get(rules.PatternField(i, "pattern"))),
			Activities: form.Get(rules.PatternField(i, "activities")), Timing: form.Get(rules.PatternField(i, "timing"))}
		if r.Pattern != "" || strings.TrimSpace(r.Activities) != "" {
			f.FilePatterns = append(f.FilePatterns, r)
		}
	}
	return f
}

// rulesFromForm builds the rules from the form; a repeated activity name is a field
// error of the row that repeats it (a map cannot hold it twice).
func rulesFromForm(f rules.Form) (models.ProjectRules, models.FieldErrors) {
	fe := models.FieldErrors{}
	r := models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{}}}
	for i, a := range f.Activities {
		name := strings.ToLower(a.Name)
		if name == "" {
			fe.Add(rules.ActivityField(i, "name"), "is required")
			continue
		}
		if _, dup := r.Activities[name]; dup {
			fe.Add(rules.ActivityField(i, "name"), "is defined twice")
			continue
		}
		r.Activities[name] = strings.TrimSpace(a.Command)
	}
	for _, fp := range f.FilePatterns {
		acts := splitList(strings.ToLower(fp.Activities))
		r.FilePatterns = append(r.FilePatterns, contract.FilePatternRule{Pattern: fp.Pattern, Activities: acts, Timing: strings.TrimSpace(fp.Timing)})
	}
	r.Always = splitList(strings.ToLower(f.Always))
	r.AdvisoryWords = splitList(strings.ToLower(f.AdvisoryWords))
	r.SkipWords = splitList(strings.ToLower(f.SkipWords))
	stacks, err := parseYAMLList[contract.Stack](f.Stacks, "stacks")
	if err != nil {
		fe.Add("stacks", err.Error())
	}
	r.Stacks = stacks
	prices, err := parseYAMLList[models.ModelPrice](f.Prices, "prices")
	if err != nil {
		fe.Add("prices", err.Error())
	}
	if reflect.DeepEqual(prices, models.DefaultPrices()) {
		prices = nil // the defaults, as shown: they stay the defaults
	}
	r.Prices = prices
	r.Hats = hatsFromForm(f.Hats)
	r.PromptForAdvisory = f.PromptForAdvisory
	return r, fe
}

var (
	patternErrRE = regexp.MustCompile(`^file_patterns\[(\d+)\]\.activities\[\d+\]$`)
	listErrRE    = regexp.MustCompile(`^(always|advisory_words|skip_words)\[(\d+)\]$`)
)

// rulesErrorKeys maps ProjectRules.Validate's keys to the form's inputs:
// activities.<name> to the command of the row with that name, an activity of a file
// pattern to the row's activities input, a word to the list it is in (naming it).
func rulesErrorKeys(f rules.Form, fe models.FieldErrors) map[string]string {
	r, _ := rulesFromForm(f)
	out := map[string]string{}
	add := func(k, m string) {
		if _, ok := out[k]; !ok {
			out[k] = m
		}
	}
	keys := make([]string, 0, len(fe))
	for k := range fe {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m := fe[k]
		switch {
		case strings.HasPrefix(k, "activities."):
			name := strings.TrimPrefix(k, "activities.")
			row := -1
			for i, a := range f.Activities {
				if strings.ToLower(a.Name) == name {
					row = i
					break
				}
			}
			field := "command"
			if strings.HasPrefix(m, "activity names") {
				field = "name"
			}
			if row < 0 {
				add("activities", name+": "+m)
			} else {
				add(rules.ActivityField(row, field), m)
			}
		case patternErrRE.MatchString(k):
			add(rules.PatternField(atoiOr(patternErrRE.FindStringSubmatch(k)[1]), "activities"), m)
		case strings.HasPrefix(k, "stacks["):
			// The stacks have one input: it lists every error, named by stack.
			msg := stackErrorLabel(k, r.Stacks) + ": " + m
			if out["stacks"] != "" {
				msg = out["stacks"] + "; " + msg
			}
			out["stacks"] = msg
		case hatErrRE.MatchString(k):
			add(rules.HatField(atoiOr(hatErrRE.FindStringSubmatch(k)[1]), "conflicts_with"), m)
		case listErrRE.MatchString(k):
			g := listErrRE.FindStringSubmatch(k)
			list := map[string][]string{"always": r.Always, "advisory_words": r.AdvisoryWords, "skip_words": r.SkipWords}[g[1]]
			if n := atoiOr(g[2]); n < len(list) {
				m = strconv.Quote(list[n]) + ": " + m
			}
			add(g[1], m)
		default:
			add(k, m)
		}
	}
	return out
}

func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// formFromRules shows rules in the form: activities sorted by name, patterns in
// their order, words one per line.
func formFromRules(r models.ProjectRules) rules.Form {
	f := rules.Form{Always: strings.Join(r.Always, ", "), AdvisoryWords: strings.Join(r.AdvisoryWords, "\n"),
		SkipWords: strings.Join(r.SkipWords, "\n"), Stacks: yamlList(r.Stacks), Prices: yamlList(r.Prices)}
	if len(r.Prices) == 0 {
		f.Prices = yamlList(models.DefaultPrices())
	}
	f.Hats, f.PromptForAdvisory = hatRows(r.HatTable()), r.PromptForAdvisory
	names := make([]string, 0, len(r.Activities))
	for n := range r.Activities {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f.Activities = append(f.Activities, rules.ActivityRow{Name: n, Command: r.Activities[n]})
	}
	for _, fp := range r.FilePatterns {
		f.FilePatterns = append(f.FilePatterns, rules.PatternRow{Pattern: fp.Pattern, Activities: strings.Join(fp.Activities, ", "), Timing: fp.Timing})
	}
	return f
}
