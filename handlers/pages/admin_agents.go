package pages

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	agentspage "github.com/countersign/countersign/web/pages/agents"
)

// maxStatusTasks bounds the in-progress tasks read to tell busy from idle agents.
const maxStatusTasks = 1000

// isAdmin reports whether a may see commands and manage agents; the service checks
// again on every change.
func isAdmin(a *models.Agent) bool { return a.HasRole(models.RoleAdmin) }

// agentRows lists every agent (the runner's system identity aside) with its status:
// busy while it holds in-progress tasks under an active lease.
func (p *Pages) agentRows(c echo.Context) ([]agentspage.Row, error) {
	ctx := c.Request().Context()
	st := p.svc.Store()
	list, err := st.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	running, err := st.ListTasks(ctx, models.TaskFilter{State: models.TaskInProgress, Limit: maxStatusTasks})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	byAgent := map[int64][]models.Task{}
	for _, t := range running {
		if t.AssigneeID != nil && t.LeaseUntil != nil && t.LeaseUntil.After(now) {
			byAgent[*t.AssigneeID] = append(byAgent[*t.AssigneeID], t)
		}
	}
	admin := isAdmin(SignedIn(c))
	rows := make([]agentspage.Row, 0, len(list))
	for _, a := range list {
		if a.Kind == models.KindSystem {
			continue
		}
		rows = append(rows, agentRow(a, byAgent[a.ID], admin))
	}
	return rows, nil
}

func agentRow(a models.Agent, tasks []models.Task, admin bool) agentspage.Row {
	r := agentspage.Row{ID: a.ID, Name: a.Name, Kind: string(a.Kind), Roles: a.Roles, Concurrency: a.Concurrency,
		Disabled: a.Disabled, Status: agentspage.StatusIdle, Running: len(tasks)}
	if admin {
		r.Command = a.Command
	}
	if len(tasks) > 0 {
		r.Status = agentspage.StatusBusy
	}
	if a.Disabled {
		r.Status = agentspage.StatusDisabled
	}
	for _, t := range tasks {
		r.Current = append(r.Current, agentspage.TaskLink{ID: t.ID, Title: t.Title})
	}
	return r
}

// agentsList answers GET /agents.
func (p *Pages) agentsList(c echo.Context) error {
	v, err := p.agentsView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, agentspage.Page(v))
}

func (p *Pages) agentsView(c echo.Context) (agentspage.View, error) {
	rows, err := p.agentRows(c)
	v := agentspage.View{Meta: p.meta(c, "Agents", layout.NavAgents), CSRF: CSRFToken(c), Admin: isAdmin(SignedIn(c)), Rows: rows,
		Add: agentspage.AgentForm{Kind: string(models.KindWorker), Concurrency: "1"}}
	v.Meta.LiveRefresh = "any" // statuses and current tasks change as the runner works
	if n, ok := p.usage.get(p.d.WorkspaceUsage); ok {
		v.WorkspaceBytes = n
		v.WorkspaceUsage = components.Bytes(n)
	}
	if p.d.Gateway != nil {
		v.Gateway = gatewayView(p.d.Gateway())
	}
	if err != nil {
		return v, err
	}
	v.Board, err = p.scoreBoard(c)
	return v, err
}

// agentCreate answers POST /agents (admins; the service refuses anyone else).
func (p *Pages) agentCreate(c echo.Context) error {
	f := agentspage.AgentForm{Name: strings.TrimSpace(c.FormValue("name")), Kind: c.FormValue("kind"), Roles: c.FormValue("roles"),
		Command: c.FormValue("command"), Workdir: strings.TrimSpace(c.FormValue("workdir")), Worktree: c.FormValue("worktree") != "",
		Concurrency: c.FormValue("concurrency")}
	sandboxForm(c, &f)
	a := &models.Agent{Name: f.Name, Kind: models.AgentKind(strings.TrimSpace(f.Kind)), Roles: splitList(f.Roles),
		Command: f.Command, Workdir: f.Workdir, Worktree: f.Worktree}
	fe := models.FieldErrors{}
	a.Concurrency = formInt(&fe, "concurrency", f.Concurrency)
	a.Sandbox = formSandbox(&fe, f)
	a.PassEnv, a.DailyBudget = formSpend(&fe, f)
	var err error
	if len(fe) == 0 {
		err = p.svc.Agents.CreateAgent(c.Request().Context(), SignedIn(c), a, c.FormValue("password"))
		if err == nil {
			setFlash(c, components.FlashSuccess, "Added agent "+a.Name+".")
			return c.Redirect(http.StatusSeeOther, "/agents/"+strconv.FormatInt(a.ID, 10))
		}
		if !isInvalid(err) {
			return err
		}
	}
	v, verr := p.agentsView(c)
	if verr != nil {
		return verr
	}
	v.Add = f
	v.AddErrors = fe
	for k, m := range fieldErrors(err) {
		v.AddErrors[k] = m
	}
	return render(c, http.StatusUnprocessableEntity, agentspage.Page(v))
}

// formInt parses a whole number typed into field; empty is 0 (the default).
func formInt(fe *models.FieldErrors, field, s string) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		fe.Add(field, field+": not a whole number")
	}
	return n
}

// agentView loads the agent of the :id parameter for its page.
func (p *Pages) agentView(c echo.Context) (agentspage.AgentView, *models.Agent, error) {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return agentspage.AgentView{}, nil, err
	}
	a, err := p.svc.Store().GetAgent(c.Request().Context(), id)
	if err != nil {
		return agentspage.AgentView{}, nil, err
	}
	if a.Kind == models.KindSystem {
		return agentspage.AgentView{}, nil, models.NotFound("agent", id)
	}
	rows, err := p.agentRows(c)
	if err != nil {
		return agentspage.AgentView{}, nil, err
	}
	admin := isAdmin(SignedIn(c))
	v := agentspage.AgentView{Meta: p.meta(c, a.Name, layout.NavAgents), CSRF: CSRFToken(c), Admin: admin,
		Row: agentRow(*a, nil, admin)}
	for _, r := range rows {
		if r.ID == a.ID {
			v.Row = r
		}
	}
	now := time.Now().UTC()
	for _, s := range []struct {
		since time.Time
		out   *string
	}{{now.Truncate(24 * time.Hour), &v.SpentToday}, {now.Add(-7 * 24 * time.Hour), &v.Spent7Days}} {
		sp, err := p.svc.Store().SpendOf(c.Request().Context(), models.SpendScope{AgentID: a.ID, Since: s.since})
		if err != nil {
			return agentspage.AgentView{}, nil, err
		}
		*s.out = sp.Summary()
	}
	v.DailyBudget = a.DailyBudget.Summary()
	if admin {
		v.Workdir, v.Worktree = a.Workdir, a.Worktree
		v.Edit = agentspage.AgentForm{Roles: strings.Join(a.Roles, ", "), Command: a.Command, Workdir: a.Workdir,
			Worktree: a.Worktree, Concurrency: strconv.Itoa(a.Concurrency), Disabled: a.Disabled,
			SandboxRead: strings.Join(a.Sandbox.Read, ", "), SandboxWrite: strings.Join(a.Sandbox.Write, ", "),
			SandboxConnect: joinPorts(a.Sandbox.Connect), SandboxAllowUnix: a.Sandbox.AllowUnix,
			PassEnv: strings.Join(a.PassEnv, ", "), DailyBudgetUSD: budgetValues(orNoBudget(a.DailyBudget))["max_cost_usd"]}
		v.Edit.Forge = a.Forge
		if v.Forges, err = p.forgeOptions(c); err != nil {
			return agentspage.AgentView{}, nil, err
		}
		v.Sandbox = agentspage.Sandbox{Read: a.Sandbox.Read, Write: a.Sandbox.Write, Connect: splitList(joinPorts(a.Sandbox.Connect)),
			AllowUnix: a.Sandbox.AllowUnix}
		if p.d.SandboxPolicy != nil {
			v.Effective = p.d.SandboxPolicy(a)
		}
	}
	if err := p.agentExtras(c, &v, a); err != nil {
		return agentspage.AgentView{}, nil, err
	}
	return v, a, nil
}

// agentShow answers GET /agents/:id.
func (p *Pages) agentShow(c echo.Context) error {
	v, _, err := p.agentView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, agentspage.Agent(v))
}

// agentUpdate answers POST /agents/:id: roles, command, workdir, worktree,
// concurrency and disabled (admins; the service refuses anyone else).
func (p *Pages) agentUpdate(c echo.Context) error {
	v, cur, err := p.agentView(c)
	if err != nil {
		return err
	}
	f := agentspage.AgentForm{Roles: c.FormValue("roles"), Command: c.FormValue("command"), Workdir: strings.TrimSpace(c.FormValue("workdir")),
		Worktree: c.FormValue("worktree") != "", Concurrency: c.FormValue("concurrency"), Disabled: c.FormValue("disabled") != "",
		Forge: c.FormValue("forge")}
	sandboxForm(c, &f)
	_, hasForge := c.Request().PostForm["forge"] // the select is shown only when a forge exists
	a := *cur
	a.Roles, a.Disabled = splitList(f.Roles), f.Disabled
	fe := models.FieldErrors{}
	if cur.Kind == models.KindWorker {
		a.Command, a.Workdir, a.Worktree = f.Command, f.Workdir, f.Worktree
		if hasForge {
			a.Forge = f.Forge
		}
		a.Sandbox = formSandbox(&fe, f)
		a.PassEnv, a.DailyBudget = formSpend(&fe, f)
	}
	a.Concurrency = formInt(&fe, "concurrency", f.Concurrency)
	if len(fe) == 0 {
		err = p.svc.Agents.UpdateAgent(c.Request().Context(), SignedIn(c), &a)
		if err == nil {
			setFlash(c, components.FlashSuccess, "Saved agent "+a.Name+".")
			return c.Redirect(http.StatusSeeOther, "/agents/"+strconv.FormatInt(a.ID, 10))
		}
		if !isInvalid(err) {
			return err
		}
	}
	v.Edit, v.Errors = f, fe
	for k, m := range fieldErrors(err) {
		v.Errors[k] = m
	}
	return render(c, http.StatusUnprocessableEntity, agentspage.Agent(v))
}

// agentToken answers POST /agents/:id/tokens: the new secret is rendered in this
// response only — never in a redirect URL, a flash cookie or a log.
func (p *Pages) agentToken(c echo.Context) error {
	v, a, err := p.agentView(c)
	if err != nil {
		return err
	}
	name := strings.TrimSpace(c.FormValue("token_name"))
	if name == "" {
		name = "dashboard " + time.Now().UTC().Format("2006-01-02 15:04")
	}
	if len(name) > 100 {
		v.Errors = map[string]string{"token_name": "must be at most 100 characters"}
		return render(c, http.StatusUnprocessableEntity, agentspage.Agent(v))
	}
	v.TokenExpires = c.FormValue("expires")
	ttl, err := models.ParseTokenTTL(v.TokenExpires)
	if err != nil {
		v.Errors = map[string]string{"expires": "choose a lifetime"}
		return render(c, http.StatusUnprocessableEntity, agentspage.Agent(v))
	}
	secret, _, err := p.svc.Tokens.IssueToken(c.Request().Context(), SignedIn(c), a.Name, name, ttl)
	if err != nil {
		return err
	}
	// Show the new token in the list too (never its secret there).
	if err := p.agentExtras(c, &v, a); err != nil {
		return err
	}
	v.NewToken, v.TokenName = secret, name
	return render(c, http.StatusOK, agentspage.Agent(v))
}

// forgeOptions are the edit form's choices of forge: none, then each forge; nil when
// there is none, or the store keeps no forges.
func (p *Pages) forgeOptions(c echo.Context) ([]components.Option, error) {
	fs, ok := p.svc.Store().(models.ForgeStore)
	if !ok {
		return nil, nil
	}
	list, err := fs.ListForges(c.Request().Context())
	if err != nil || len(list) == 0 {
		return nil, err
	}
	out := []components.Option{{Value: "", Label: "none"}}
	for _, f := range list {
		out = append(out, components.Option{Value: f.Name, Label: f.Name + " (" + f.Kind + " " + f.Repo + ")"})
	}
	return out, nil
}

// gatewayView writes the gateway's status for people.
func gatewayView(st models.GatewayStatus) *agentspage.Gateway {
	g := &agentspage.Gateway{Serving: st.Serving, Addr: st.Addr, Live: st.Live, Network: st.Network,
		Providers: strings.Join(st.Providers, ", "), Egress: strings.Join(st.Egress, ", ")}
	if g.Providers == "" {
		g.Providers = "no provider (set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY for the runner)"
	}
	if g.Egress == "" {
		g.Egress = "no other host"
	}
	return g
}
