package pages

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	agentpage "github.com/countersign/countersign/web/pages/agent"
)

// honestyView is the scorecard page's honesty section of st; for a lead, with the
// agent's canary tasks and the scheduling form (form as typed, or a fresh one).
func (p *Pages) honestyView(c echo.Context, st *models.AgentStats, form *agentpage.CanaryForm) (agentpage.Honesty, error) {
	var v agentpage.Honesty
	if st.Honesty == nil {
		return v, nil
	}
	v.Shown = true
	v.Figures = honestyRow(st.Agent.Name, "", "honesty-agent", st.Honesty.Honesty)
	for _, m := range st.Honesty.Models {
		v.Models = append(v.Models, honestyRow(modelName(m.Model), "", "honesty-model-"+modelName(m.Model), m.Honesty))
	}
	me := SignedIn(c)
	if !me.HasRole(models.RoleLead) || st.Agent.Kind != string(models.KindWorker) {
		return v, nil
	}
	runs, err := p.svc.Stats.CanaryRuns(c.Request().Context(), me, st.Agent.ID)
	if err != nil {
		return v, err
	}
	for _, r := range runs {
		v.Canaries = append(v.Canaries, agentpage.CanaryRow{TaskID: r.TaskID, Title: r.Title, Kind: r.Kind, State: string(r.State), Result: r.Result})
	}
	if form == nil {
		form = &agentpage.CanaryForm{Values: map[string]string{"kind": models.CanaryGo}}
	}
	form.Action, form.CSRF = "/agents/"+strconv.FormatInt(st.Agent.ID, 10)+"/canaries", CSRFToken(c)
	for _, k := range models.CanaryKinds {
		var label string
		if b, ok := models.CanaryBuiltinOf(k); ok {
			label = k + ": " + b.Title
		} else {
			label = k + ": the team's own brief and held-out test"
		}
		form.Kinds = append(form.Kinds, components.Option{Value: k, Label: label})
	}
	for _, r := range st.Agent.Roles {
		form.Roles = append(form.Roles, components.Option{Value: r})
	}
	v.Form = form
	return v, nil
}

// modelName names a model in the honesty section; "unknown" for attempts whose
// usage named none.
func modelName(m string) string {
	if m == "" {
		return "unknown"
	}
	return m
}

// honestyRow writes h for a table.
func honestyRow(name, href, testid string, h models.Honesty) components.HonestyRow {
	return components.HonestyRow{Name: name, Href: href, TestID: testid, Attempts: h.Attempts, Tamper: h.TamperFailures,
		JudgeCanary: h.JudgeCanaryViolations, Mismatch: h.UsageMismatches, CanaryTasks: h.CanaryTasks, Cheats: h.CanaryCheats,
		Impossible: h.HonestImpossible, Failed: h.CanaryFailed, Flagged: h.Flagged}
}

// canaryFields maps the service's field names to the form's.
var canaryFields = map[string]string{
	"contract.verification.held_out[0].path":    "held_out_path",
	"contract.verification.held_out[0].content": "held_out_content",
	"held_out": "held_out_content",
	"agent":    "form",
}

// agentCanary answers POST /agents/:id/canaries: a lead schedules a canary task for
// the agent. Field errors re-render the scorecard page (422) with the form as typed.
func (p *Pages) agentCanary(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, err := p.svc.Store().GetAgent(ctx, id)
	if err != nil {
		return err
	}
	values := map[string]string{}
	for _, f := range []string{"kind", "role", "title", "brief", "verify", "held_out_path", "held_out_content"} {
		values[f] = c.FormValue(f)
	}
	spec := models.CanarySpec{Agent: a.Name, Kind: values["kind"], Role: values["role"], Title: values["title"],
		Brief: values["brief"], Verify: values["verify"]}
	if strings.TrimSpace(values["held_out_path"]) != "" || strings.TrimSpace(values["held_out_content"]) != "" {
		spec.HeldOut = []contract.HeldOutTest{{Path: strings.TrimSpace(values["held_out_path"]), Content: values["held_out_content"]}}
	}
	t, err := p.svc.Tasks.ScheduleCanary(ctx, SignedIn(c), spec)
	if isInvalid(err) {
		errs := map[string]string{}
		for k, msg := range fieldErrors(err) {
			if f, ok := canaryFields[k]; ok {
				k = f
			}
			if _, ok := values[k]; !ok {
				k = "form"
			}
			if _, dup := errs[k]; !dup {
				errs[k] = msg
			}
		}
		return p.renderScorecard(c, id, models.StatsDays[0], http.StatusUnprocessableEntity,
			&agentpage.CanaryForm{Values: values, Errors: errs})
	}
	if err != nil {
		return err
	}
	return done(c, "/agents/"+strconv.FormatInt(id, 10)+"/scorecard", "Canary task #"+strconv.FormatInt(t.ID, 10)+" scheduled for "+a.Name+".")
}

// honestyBoard writes the ranking's honesty section: a row per agent (linking its
// scorecard) and per model; nil when the store keeps none.
func honestyBoard(b *models.HonestyBoard, days int) (agents, byModel []components.HonestyRow) {
	if b == nil {
		return nil, nil
	}
	agents = []components.HonestyRow{}
	for _, a := range b.Agents {
		href := "/agents/" + strconv.FormatInt(a.Agent.ID, 10) + "/scorecard?days=" + strconv.Itoa(days)
		agents = append(agents, honestyRow(a.Agent.Name, href, "honesty-rank-"+a.Agent.Name, a.Honesty))
	}
	for _, m := range b.Models {
		byModel = append(byModel, honestyRow(modelName(m.Model), "", "honesty-rank-model-"+modelName(m.Model), m.Honesty))
	}
	return agents, byModel
}
