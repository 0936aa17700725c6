package pages_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// TestRulesPageHatsAndAdvisoryPrompt: the rules page edits the hat table (the
// defaults shown, a hat added, a bad conflict beside its row) and the
// prompt_for_advisory switch, and both round-trip: saved as typed, shown again,
// cleared again, each change named in the rules' history.
func TestRulesPageHatsAndAdvisoryPrompt(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := &admEnv{newEnvWith(t, d, envOptions{ledger: pagesLocal})}
		e.human("eve", "editor")
		c := e.login("eve")
		ctx := context.Background()

		page := c.get("/rules")
		page.want(t, http.StatusOK, `data-testid="rules-hats"`, `data-testid="hat-row-4"`, `data-testid="prompt_for_advisory"`)
		form := formValues(t, page.Body, "/rules")
		if form.Get("hats[2].name") != "tester" || form.Get("hats[2].conflicts_with") != "builder" || form.Get("hats[0].name") != "builder" {
			t.Fatalf("the default hats are not shown: %v", form)
		}
		if form.Has("prompt_for_advisory") {
			t.Fatal("prompt_for_advisory shown on by default")
		}

		// Saved as shown: the hats stay the defaults, the prompt off.
		c.post("/rules", form).want(t, http.StatusSeeOther)
		saved, err := e.db.GetRules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if saved.Hats != nil || saved.PromptForAdvisory {
			t.Fatalf("saving the defaults stored hats %v, prompt %v", saved.Hats, saved.PromptForAdvisory)
		}

		// A hat added and the prompt switched on: saved, shown checked, in the history.
		form.Set("hats[4].name", "Auditor")
		form.Set("hats[4].conflicts_with", "builder, tester")
		form.Set("prompt_for_advisory", "on")
		c.post("/rules", form).want(t, http.StatusSeeOther)
		saved, _ = e.db.GetRules(ctx)
		want := append(models.DefaultHats(), models.Hat{Name: "auditor", ConflictsWith: []string{"builder", "tester"}})
		if !saved.PromptForAdvisory || !slices.EqualFunc(saved.Hats, want, func(a, b models.Hat) bool {
			return a.Name == b.Name && slices.Equal(a.ConflictsWith, b.ConflictsWith)
		}) {
			t.Fatalf("saved hats %v, prompt %v", saved.Hats, saved.PromptForAdvisory)
		}
		page = c.get("/rules")
		page.want(t, http.StatusOK)
		if !regexp.MustCompile(`<input[^>]*name="prompt_for_advisory"[^>]*checked`).MatchString(page.Body) {
			t.Fatal("prompt_for_advisory is not shown checked")
		}
		again := formValues(t, page.Body, "/rules")
		if again.Get("hats[4].name") != "auditor" || again.Get("hats[4].conflicts_with") != "builder, tester" || again.Get("prompt_for_advisory") != "on" {
			t.Fatalf("the saved hats and prompt are not shown: %v", again)
		}
		evs := mustEvents(t, e)
		var change models.Change
		if err := json.Unmarshal(evs[len(evs)-1].Data, &change); err != nil || !slices.Contains(change.Changed, "hats") || !slices.Contains(change.Changed, "prompt_for_advisory") {
			t.Fatalf("the rules change names %v (%v)", change.Changed, err)
		}

		// Unchecked, the prompt is off again.
		again.Del("prompt_for_advisory")
		c.post("/rules", again).want(t, http.StatusSeeOther)
		if saved, _ = e.db.GetRules(ctx); saved.PromptForAdvisory || len(saved.Hats) != 5 {
			t.Fatalf("after unchecking: prompt %v, hats %v", saved.PromptForAdvisory, saved.Hats)
		}

		// A conflict with no such hat: beside its row, nothing saved.
		again.Set("hats[4].conflicts_with", "builder, nobody")
		res := c.post("/rules", again)
		res.want(t, http.StatusUnprocessableEntity, "Nothing was saved")
		assertFieldError(t, res.Body, "hats[4].conflicts_with", `unknown hat "nobody"`)
		if saved, _ = e.db.GetRules(ctx); !slices.Contains(saved.Hats[4].ConflictsWith, "tester") {
			t.Fatalf("a refused save changed the hats: %v", saved.Hats)
		}
	})
}
