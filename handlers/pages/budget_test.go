package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestPagesShowUsageAndBudgets: the task page shows what each attempt used and what
// the task spent, the goal page its tasks' spend, the agent page today's and the
// overview the day's; a lead or exec sets a task's budget in a form that re-renders
// with field errors (422) and changes nothing on bad input; anyone else gets no form
// and a refusal.
func TestPagesShowUsageAndBudgets(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := e.ctx()
	g := &models.Goal{Title: "Costs"}
	must(t, e.svc.Goals.CreateGoal(ctx, models.System, g))
	tk := e.humanTask("Spend", &g.ID, models.TaskVerified)
	in, out, cost, turns := int64(1200), int64(300), 0.42, 3
	now := time.Now().UTC()
	must(t, e.db.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: e.agents["bot"].ID, RunnerID: "r",
		Outcome: models.OutcomePassed, StartedAt: now, FinishedAt: &now,
		Usage: &models.Usage{InputTokens: &in, OutputTokens: &out, CostUSD: &cost, CostSource: models.CostReported, Turns: &turns, Model: "claude-sonnet-4-5"}}))

	lead := e.browser().login("lead")
	pg := lead.get("/tasks/" + itoa64(tk.ID))
	for _, want := range []string{"1,200 in · 300 out · $0.42 · 3 turns · claude-sonnet-4-5", "Spent: $0.42 · 1,500 tokens", `data-testid="budget-form"`} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the task page lacks %q", want)
		}
	}
	if gp := lead.get("/goals/" + itoa64(g.ID)); !strings.Contains(gp.Body, "Spent: $0.42") {
		t.Fatal("the goal page does not show its tasks' spend")
	}
	if ov := lead.get("/"); !strings.Contains(ov.Body, "Spent today: $0.42") {
		t.Fatal("the overview does not show the day's spend")
	}
	if ag := lead.get("/agents/" + itoa64(e.agents["bot"].ID)); !strings.Contains(ag.Body, "$0.42") {
		t.Fatal("the agent page does not show the agent's spend")
	}

	events := e.eventCount()
	r := lead.post("/tasks/"+itoa64(tk.ID)+"/budget", url.Values{"max_cost_usd": {"lots"}})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "must be an amount in USD") {
		t.Fatalf("a bad budget: %d, want 422 with the field's error", r.Status)
	}
	if e.eventCount() != events {
		t.Fatal("a refused budget changed something")
	}
	if r := lead.post("/tasks/"+itoa64(tk.ID)+"/budget", url.Values{"max_cost_usd": {"2.50"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("setting the budget: %d", r.Status)
	}
	got, err := e.db.GetTask(ctx, tk.ID)
	must(t, err)
	if got.Contract.Budget == nil || *got.Contract.Budget.MaxCostUSD != 2.5 {
		t.Fatalf("the task's budget: %+v", got.Contract.Budget)
	}
	if !strings.Contains(lead.get("/tasks/"+itoa64(tk.ID)).Body, "Budget: $2.50") {
		t.Fatal("the task page does not show the budget")
	}

	dev := e.browser().login("dev")
	if strings.Contains(dev.get("/tasks/"+itoa64(tk.ID)).Body, `data-testid="budget-form"`) {
		t.Fatal("a developer is offered the budget form")
	}
	if r := dev.post("/tasks/"+itoa64(tk.ID)+"/budget", url.Values{"max_cost_usd": {"100"}}); r.Status != http.StatusForbidden {
		t.Fatalf("a developer's budget: %d, want 403", r.Status)
	}
}

// TestAgentFormPassesEnvAndCapsTheDay: an admin names the variables a worker gets and
// its daily budget in the agent form; a name the runner sets itself re-renders the
// form (422) and changes nothing; people who are not admins see neither.
func TestAgentFormPassesEnvAndCapsTheDay(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	bot := e.agents["bot"]
	admin := e.browser().login("admin")
	path := "/agents/" + itoa64(bot.ID)
	form := url.Values{"roles": {"developer"}, "command": {"true"}, "concurrency": {"1"},
		"pass_env": {"ANTHROPIC_API_KEY, OPENAI_API_KEY"}, "daily_budget": {"20"}}
	if r := admin.post(path, form); r.Status != http.StatusSeeOther {
		t.Fatalf("saving the agent: %d: %.300s", r.Status, r.Body)
	}
	got, err := e.db.GetAgent(e.ctx(), bot.ID)
	must(t, err)
	if strings.Join(got.PassEnv, ",") != "ANTHROPIC_API_KEY,OPENAI_API_KEY" || got.DailyBudget == nil || *got.DailyBudget.MaxCostUSD != 20 {
		t.Fatalf("stored: pass_env %v, daily budget %+v", got.PassEnv, got.DailyBudget)
	}
	events := e.eventCount()
	form.Set("pass_env", "COUNTERSIGN_TOKEN")
	if r := admin.post(path, form); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "is set by the runner itself") {
		t.Fatalf("passing the runner's own variable: %d", r.Status)
	}
	if e.eventCount() != events {
		t.Fatal("a refused agent form changed something")
	}
	if pg := e.browser().login("lead").get(path); strings.Contains(pg.Body, "OPENAI_API_KEY") {
		t.Fatal("a lead sees the variables a worker gets")
	}
}

// TestRulesPageEditsPrices: the rules page shows the price table (Anthropic's list
// prices until one is saved); a price added there is what attempts are charged; a
// pattern that is not a regular expression re-renders the page (422) and saves nothing.
func TestRulesPageEditsPrices(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	admin := e.browser().login("admin")
	page := admin.get("/rules")
	if !strings.Contains(page.Body, `name="prices"`) || !strings.Contains(page.Body, "claude-haiku-4-5") {
		t.Fatal("the rules page does not show the default prices")
	}
	form := formValues(t, page.Body, "/rules")
	form.Set("prices", "- pattern: mystery-.*\n  input_per_mtok: 2\n  output_per_mtok: 8\n")
	if r := admin.post("/rules", form); r.Status != http.StatusSeeOther {
		t.Fatalf("saving prices: %d: %.300s", r.Status, r.Body)
	}
	saved, err := e.db.GetRules(e.ctx())
	must(t, err)
	if p, ok := models.PriceOf(saved.Prices, "Mystery-1"); !ok || p.OutputPerMTok != 8 {
		t.Fatalf("saved prices %+v", saved.Prices)
	}
	events := e.eventCount()
	form.Set("prices", "- pattern: \"(\"\n  input_per_mtok: 1\n")
	if r := admin.post("/rules", form); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "is not a regular expression") {
		t.Fatalf("a broken pattern: %d", r.Status)
	}
	if e.eventCount() != events {
		t.Fatal("a refused price table changed something")
	}
}

// TestInboxRaisesAStoppedBudget: a task a budget stopped offers, in the inbox, a form
// that raises its budget and resumes it; a bad amount re-renders the inbox (422).
func TestInboxRaisesAStoppedBudget(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := e.ctx()
	cent := 0.01
	tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Capped", Brief: "b", Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "DONE"}, Budget: &contract.Budget{MaxCostUSD: &cent}}})
	must(t, err)
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	runner, err := e.svc.Agents.RunnerAgent(ctx)
	must(t, err)
	must(t, e.db.InTx(ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(ctx, tk.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockOnBudget(ctx, tx, runner, lt, models.BudgetLimit{Scope: "task " + itoa64(tk.ID), Budget: *lt.Contract.Budget, Spend: models.Spend{CostUSD: 0.02}})
	}))
	exec := e.browser().login("exec")
	if pg := exec.get("/inbox"); !strings.Contains(pg.Body, `data-testid="inbox-form-raise-budget"`) {
		t.Fatal("the inbox offers no budget raise for a task a budget stopped")
	}
	form := url.Values{"back": {"/inbox"}, "max_cost_usd": {"ten"}}
	if r := exec.post("/tasks/"+itoa64(tk.ID)+"/budget", form); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "must be an amount in USD") {
		t.Fatalf("a bad amount from the inbox: %d", r.Status)
	}
	form.Set("max_cost_usd", "10")
	if r := exec.post("/tasks/"+itoa64(tk.ID)+"/budget", form); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/inbox" {
		t.Fatalf("raising from the inbox: %d to %q", r.Status, r.Header.Get("Location"))
	}
	if s := e.state(tk.ID); s == models.TaskBlocked {
		t.Fatalf("the task is still blocked after its budget was raised")
	}
}
