package pages

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	agentspage "github.com/countersign/countersign/web/pages/agents"
)

// agentHistoryLimit is how many of an agent's newest changes its page lists.
const agentHistoryLimit = 50

// sandboxForm reads the sandbox fields of the agent forms into f.
func sandboxForm(c echo.Context, f *agentspage.AgentForm) {
	f.SandboxRead, f.SandboxWrite = c.FormValue("sandbox.read"), c.FormValue("sandbox.write")
	f.SandboxConnect, f.SandboxAllowUnix = c.FormValue("sandbox.connect"), c.FormValue("sandbox.allow_unix") != ""
	f.PassEnv, f.DailyBudgetUSD = c.FormValue("pass_env"), strings.TrimSpace(c.FormValue("daily_budget"))
}

// formSpend turns the pass-env and daily budget fields into settings; an amount that
// is no number is a field error. The service checks the rest.
func formSpend(fe *models.FieldErrors, f agentspage.AgentForm) ([]string, *contract.Budget) {
	var daily *contract.Budget
	if s := strings.TrimPrefix(f.DailyBudgetUSD, "$"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			fe.Add("daily_budget", "must be an amount in USD, like 20")
		} else {
			daily = &contract.Budget{MaxCostUSD: &v}
		}
	}
	return splitList(f.PassEnv), daily
}

// formSandbox turns the sandbox fields as typed into settings (paths and ports comma-
// or line-separated); a port that is no number is a field error. The service checks
// the rest.
func formSandbox(fe *models.FieldErrors, f agentspage.AgentForm) models.AgentSandbox {
	sb := models.AgentSandbox{Read: splitList(f.SandboxRead), Write: splitList(f.SandboxWrite), AllowUnix: f.SandboxAllowUnix}
	for _, p := range splitList(f.SandboxConnect) {
		n, err := strconv.Atoi(p)
		if err != nil {
			fe.Add("sandbox.connect", fmt.Sprintf("%q is not a port number", p))
			continue
		}
		sb.Connect = append(sb.Connect, n)
	}
	return sb
}

func joinPorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// agentExtras adds to an agent page what depends on who is looking: the agent's
// tokens for an admin or the agent itself, and its history (the values of the fields
// only admins see left out for others).
func (p *Pages) agentExtras(c echo.Context, v *agentspage.AgentView, a *models.Agent) error {
	ctx := c.Request().Context()
	viewer := SignedIn(c)
	svc := p.d.Service
	v.ManageTokens = isAdmin(viewer) || viewer.ID == a.ID
	switch {
	case a.Kind != models.KindHuman:
	case isAdmin(viewer):
		v.Password = agentspage.PasswordSet
	case viewer.ID == a.ID:
		v.Password = agentspage.PasswordChange
	}
	v.PasswordHelp = fmt.Sprintf("at least %d characters", models.MinPasswordLength)
	if v.TokenExpires == "" {
		v.TokenExpires = "90d"
	}
	if v.ManageTokens {
		tokens, err := svc.Tokens.ListTokens(ctx, viewer, a.Name)
		if err != nil {
			return err
		}
		now := svc.Now()
		v.Tokens = make([]agentspage.TokenRow, len(tokens))
		for i, t := range tokens {
			v.Tokens[i] = agentspage.TokenRow{ID: t.ID, Name: t.Name, Status: t.Status(now), Created: t.CreatedAt,
				Expires: t.ExpiresAt, LastUsed: t.LastUsedAt}
		}
	}
	evs, err := svc.Store().ListAgentEvents(ctx, a.ID, agentHistoryLimit)
	if err != nil {
		return err
	}
	v.History = make([]components.HistoryItem, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		v.History = append(v.History, agentHistoryItem(evs[i].VisibleTo(viewer)))
	}
	return nil
}

// agentEventData is what the agent and token events record.
type agentEventData struct {
	By      string                        `json:"by"`
	Name    string                        `json:"name"` // token events: the token's label
	Changes map[string]models.FieldChange `json:"changes"`
}

// agentHistoryItem shows one event about an agent: a change with its fields before and
// after as a diff, a creation with its first values, a token created or revoked.
func agentHistoryItem(e models.Event) components.HistoryItem {
	var d agentEventData
	_ = json.Unmarshal(e.Data, &d)
	it := components.HistoryItem{Title: e.Type, Actor: d.By, At: e.CreatedAt}
	switch e.Type {
	case models.AgentChangedEvent:
		it.Title = "changed"
		var before, after strings.Builder
		for _, f := range slices.Sorted(maps.Keys(d.Changes)) {
			ch := d.Changes[f]
			it.Changed = append(it.Changed, f)
			if ch.Hidden {
				continue
			}
			fmt.Fprintf(&before, "%s: %s\n", f, showValue(ch.Before))
			fmt.Fprintf(&after, "%s: %s\n", f, showValue(ch.After))
		}
		it.Diff = models.TextDiff(before.String(), after.String(), models.DiffLimit)
	case "agent.created":
		it.Title = "created"
		var fields map[string]any
		_ = json.Unmarshal(e.Data, &fields)
		var after strings.Builder
		for _, f := range []string{"kind", "roles", "command", "workdir", "worktree", "concurrency", "disabled", "sandbox"} {
			if v, ok := fields[f]; ok {
				it.Changed = append(it.Changed, f)
				fmt.Fprintf(&after, "%s: %s\n", f, showValue(v))
			}
		}
		it.Diff = models.TextDiff("", after.String(), models.DiffLimit)
	case models.AgentPasswordSet:
		it.Title, it.Changed = "password set", []string{"password"}
	case "token.created", "token.revoked":
		it.Title = strings.Replace(e.Type, ".", " ", 1) + ": " + d.Name
		it.Changed = []string{"tokens"}
	}
	return it
}

// showValue writes a recorded value on one line of a history diff: lists joined by
// commas, a multi-line command with its line breaks shown as ⏎.
func showValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case string:
		if v == "" {
			return "—"
		}
		return strings.ReplaceAll(v, "\n", " ⏎ ")
	case []any:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = showValue(x)
		}
		if len(s) == 0 {
			return "—"
		}
		return strings.Join(s, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// agentTokenRevoke answers POST /agents/:id/tokens/:tid/revoke: an admin, or the agent
// itself, revokes one of its tokens, which is refused from then on.
func (p *Pages) agentTokenRevoke(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	tid, err := handlers.PathID(c, "tid")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := p.svc.Store().GetToken(ctx, tid)
	if err != nil {
		return err
	}
	if t.AgentID != id {
		return models.NotFound("token", tid)
	}
	t, err = p.svc.Tokens.RevokeToken(ctx, SignedIn(c), tid)
	if err != nil {
		return err
	}
	setFlash(c, components.FlashSuccess, "Revoked token "+t.Name+".")
	return c.Redirect(http.StatusSeeOther, "/agents/"+strconv.FormatInt(id, 10))
}

// agentPassword answers POST /agents/:id/password: an admin sets a person's password,
// a person changes their own with the current one (the service decides who may).
// Refused input re-renders the page with the field errors (422); the password is
// never rendered back.
func (p *Pages) agentPassword(c echo.Context) error {
	v, a, err := p.agentView(c)
	if err != nil {
		return err
	}
	fe := models.FieldErrors{}
	password := c.FormValue("password")
	if c.FormValue("password_confirm") != password {
		fe.Add("password_confirm", "does not match the new password")
	}
	if len(fe) == 0 {
		err = p.svc.Agents.SetPassword(c.Request().Context(), SignedIn(c), a.Name, c.FormValue("current_password"), password)
		if err == nil {
			setFlash(c, components.FlashSuccess, "Password of "+a.Name+" set.")
			return c.Redirect(http.StatusSeeOther, "/agents/"+strconv.FormatInt(a.ID, 10))
		}
		if !isInvalid(err) {
			return err
		}
	}
	v.Errors = fe
	for k, m := range fieldErrors(err) {
		v.Errors[k] = m
	}
	return render(c, http.StatusUnprocessableEntity, agentspage.Agent(v))
}
