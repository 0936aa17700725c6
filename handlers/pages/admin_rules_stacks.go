package pages

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/pages/rules"
)

// rulesStacks answers POST /rules/stacks: which stacks of the saved rules a directory
// on the server matches, with the commands its tasks would get. The service checks the
// role (admin, editor, lead) and the path (absolute, an existing directory, only
// read); a bad path is shown beside the field (422).
func (p *Pages) rulesStacks(c echo.Context) error {
	v, err := p.rulesView(c)
	if err != nil {
		return err
	}
	v.Check = rules.CheckForm{Path: strings.TrimSpace(c.FormValue("path"))}
	res, err := p.svc.Templates.CheckWorkspace(c.Request().Context(), SignedIn(c), v.Check.Path, nil)
	if err != nil {
		if !isInvalid(err) {
			return err
		}
		v.CheckError = fieldErrors(err)["path"]
		if v.CheckError == "" {
			v.CheckError = models.ErrorMessage(err)
		}
		return render(c, http.StatusUnprocessableEntity, rules.Page(v))
	}
	v.CheckResult = checkResultView(res)
	return render(c, http.StatusOK, rules.Page(v))
}

func checkResultView(w *models.WorkspaceCheck) *rules.CheckResult {
	f := w.Facts
	r := &rules.CheckResult{Dir: w.Dir, Files: len(f.Files), Scripts: f.Scripts, Targets: f.Targets, Tools: f.Tools, Problems: f.Problems}
	for _, tool := range slices.Sorted(maps.Keys(f.Configured)) {
		r.Configured = append(r.Configured, tool+" in "+f.Configured[tool])
	}
	for _, m := range w.Matches {
		cm := rules.CheckMatch{Name: m.Name, Reason: m.Reason, Left: m.Left, Protect: m.Protect}
		if m.Results != nil {
			cm.Results = m.Results.Format + ": " + m.Results.Command
		}
		for _, mc := range m.Commands {
			cm.Commands = append(cm.Commands, rules.CheckCommand{Activity: mc.Activity, Command: mc.Command,
				Reason: mc.Reason, Missing: strings.Join(mc.Missing, ", ")})
		}
		r.Matches = append(r.Matches, cm)
	}
	return r
}

// stackViews shows the stacks of the rules.
func stackViews(stacks []contract.Stack) []rules.StackView {
	conds := func(cs []contract.Condition, join string) string {
		parts := make([]string, len(cs))
		for i, c := range cs {
			parts[i] = c.String()
		}
		return strings.Join(parts, join)
	}
	var out []rules.StackView
	for _, st := range stacks {
		sv := rules.StackView{Name: st.Name, Detect: conds(st.Detect, " or "), Protect: st.Protect, Pins: st.Pins}
		for _, in := range st.Install {
			line := in.Command
			if len(in.When) > 0 {
				line += " (when " + conds(in.When, " and ") + ")"
			}
			sv.Install = append(sv.Install, line)
		}
		for _, sc := range st.Commands {
			sv.Commands = append(sv.Commands, rules.StackCommandView{Activity: sc.Activity, Command: sc.Command,
				Description: sc.Description, When: conds(sc.When, " and "), Tools: strings.Join(sc.Tools, ", ")})
		}
		for _, r := range st.Results {
			line := r.Format + ": " + r.Command
			if len(r.When) > 0 {
				line += " (when " + conds(r.When, " and ") + ")"
			}
			sv.Results = append(sv.Results, line)
		}
		out = append(out, sv)
	}
	return out
}

// yamlList writes a list of rules (stacks, prices) for the form; "" for none.
func yamlList[T any](items []T) string {
	if len(items) == 0 {
		return ""
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(items); err != nil {
		return ""
	}
	_ = enc.Close()
	return buf.String()
}

// parseYAMLList reads a list of what (stacks, prices) from the form, strictly (an
// unknown field is an error, not silently dropped); blank is none.
func parseYAMLList[T any](text, what string) ([]T, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var items []T
	if err := dec.Decode(&items); err != nil && !errors.Is(err, io.EOF) {
		return nil, errors.New("not a YAML list of " + what + ": " + strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return items, nil
}

var stackErrRE = regexp.MustCompile(`^stacks\[(\d+)\]\.?(.*)$`)

// stackErrorLabel names a stacks error key by the stack's name: stacks[1].commands[0]
// → "node: commands[0]".
func stackErrorLabel(key string, stacks []contract.Stack) string {
	g := stackErrRE.FindStringSubmatch(key)
	if g == nil {
		return key
	}
	i := atoiOr(g[1])
	name := "stacks[" + g[1] + "]"
	if i < len(stacks) && stacks[i].Name != "" {
		name = stacks[i].Name
	}
	if g[2] == "" {
		return name
	}
	return name + ": " + g[2]
}
