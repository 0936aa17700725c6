package handlers_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// auditEvents returns the data of every stored event of type typ with its actor id,
// oldest first.
func (e *apiEnv) auditEvents(typ string) ([]models.Change, []int64) {
	e.t.Helper()
	r := e.must(200, e.anyToken(), "GET", "/events?after=0&limit=1000", nil)
	raw, _ := json.Marshal(r.Body["events"])
	var evs []models.Event
	if err := json.Unmarshal(raw, &evs); err != nil {
		e.t.Fatal(err)
	}
	var changes []models.Change
	var actors []int64
	for _, ev := range evs {
		if ev.Type != typ {
			continue
		}
		var c models.Change
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			e.t.Fatalf("%s data %s: %v", typ, ev.Data, err)
		}
		changes = append(changes, c)
		actor := int64(0)
		if ev.ActorID != nil {
			actor = *ev.ActorID
		}
		actors = append(actors, actor)
	}
	return changes, actors
}

// wantDiff fails unless diff has every line of lines.
func wantDiff(t *testing.T, diff string, lines ...string) {
	t.Helper()
	have := strings.Split(diff, "\n")
	for _, l := range lines {
		if !slices.Contains(have, l) {
			t.Fatalf("diff lacks the line %q:\n%s", l, diff)
		}
	}
}

// TestAuditTrailOfRulesAndTemplates: every save of the project rules and every new
// template version is an event naming who changed what, with a line diff from what it
// replaced, bounded in size.
func TestAuditTrailOfRulesAndTemplates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		eddie := e.agent("eddie", models.KindHuman, "editor")
		lena := e.agent("lena", models.KindHuman, "lead")

		// Rules: first against the defaults, then against the rules saved before.
		rules := models.DefaultRules()
		rules.Stacks[0].Commands[0].Command = "go test -race ./..."
		e.must(200, "eddie", "PUT", "/rules", rules)
		rules.Always = []string{"unit-test", "vet"}
		delete(rules.Activities, "docs")
		rules.FilePatterns = slices.DeleteFunc(rules.FilePatterns, func(p contract.FilePatternRule) bool { return slices.Contains(p.Activities, "docs") })
		rules.Stacks = slices.DeleteFunc(rules.Stacks, func(s contract.Stack) bool { return s.Name == "make" })
		e.must(200, "lena", "PUT", "/rules", rules)
		changes, actors := e.auditEvents(models.EventRulesChanged)
		if len(changes) != 2 || actors[0] != eddie.ID || actors[1] != lena.ID || changes[0].By != "eddie" || changes[1].By != "lena" {
			t.Fatalf("rules changes %+v by %v", changes, actors)
		}
		if got := changes[0].Changed; !slices.Equal(got, []string{"stacks.go"}) {
			t.Fatalf("first change names %q", got)
		}
		wantDiff(t, changes[0].Diff, "-        command: go test ./...", "+        command: go test -race ./...")
		if got := changes[1].Changed; !slices.Equal(got, []string{"activities.docs", "file_patterns", "always", "stacks.make"}) {
			t.Fatalf("second change names %q", got)
		}
		wantDiff(t, changes[1].Diff, "-      - docs", "+  - unit-test", "-  - name: make", "-        command: make test")
		if strings.Contains(changes[1].Diff, "go test ./...\n") || strings.Contains(changes[1].Diff, "-        command: go test -race") {
			t.Fatalf("the second diff is not against the first save:\n%s", changes[1].Diff)
		}

		// Templates: a new one is all added lines; a new version is diffed against the
		// version before.
		tpl := map[string]any{"name": "ship", "description": "Build and review", "steps": []any{
			map[string]any{"role": "developer", "brief": "Build it"}, map[string]any{"role": "reviewer", "brief": "Review it"}}}
		e.must(201, "eddie", "POST", "/templates", tpl)
		tpl["steps"].([]any)[1] = map[string]any{"role": "reviewer", "brief": "Review it twice"}
		e.must(201, "lena", "POST", "/templates", tpl)
		tc, tActors := e.auditEvents(models.EventTemplateChanged)
		if len(tc) != 2 || tActors[0] != eddie.ID || tActors[1] != lena.ID {
			t.Fatalf("template changes %+v by %v", tc, tActors)
		}
		if tc[0].Name != "ship" || tc[0].Version != 1 || tc[0].FromVersion != 0 || !slices.Equal(tc[0].Changed, []string{"description", "steps[0]", "steps[1]"}) {
			t.Fatalf("new template change %+v", tc[0])
		}
		wantDiff(t, tc[0].Diff, "+name: ship", "+    brief: Build it")
		if tc[1].Version != 2 || tc[1].FromVersion != 1 || tc[1].By != "lena" || !slices.Equal(tc[1].Changed, []string{"steps[1]"}) {
			t.Fatalf("second version's change %+v", tc[1])
		}
		wantDiff(t, tc[1].Diff, "-    brief: Review it", "+    brief: Review it twice")
		if strings.Contains(tc[1].Diff, "-    brief: Build it") || strings.Contains(tc[1].Diff, "+  - role: developer") {
			t.Fatalf("unchanged lines shown as changed:\n%s", tc[1].Diff)
		}

		// A change bigger than the bound is cut, with a note.
		for i := range 150 {
			rules.Activities[fmt.Sprintf("check-%03d", i)] = "echo " + strings.Repeat("x", 100)
		}
		e.must(200, "eddie", "PUT", "/rules", rules)
		changes, _ = e.auditEvents(models.EventRulesChanged)
		big := changes[len(changes)-1].Diff
		if len(big) > models.DiffLimit || !strings.Contains(big, "… diff truncated:") || len(changes[len(changes)-1].Changed) != 150 {
			t.Fatalf("big diff: %d bytes, %d fields, ends %q", len(big), len(changes[len(changes)-1].Changed), big[max(0, len(big)-80):])
		}
	})
}
