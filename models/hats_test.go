package models_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestDefaultHatsReproduceTheSeed: the verifier's tester hat conflicts with builder
// (both ways), and nothing else conflicts by default.
func TestDefaultHatsReproduceTheSeed(t *testing.T) {
	table := models.ProjectRules{}.HatTable()
	for _, pair := range [][2]string{{"tester", "builder"}, {"builder", "tester"}} {
		if !models.HatsConflict(table, pair[0], pair[1]) {
			t.Fatalf("%s and %s do not conflict by default", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"tester", "reviewer"}, {"builder", "reviewer"}, {"pilot", "builder"}, {"tester", "tester"}} {
		if models.HatsConflict(table, pair[0], pair[1]) {
			t.Fatalf("%s and %s conflict by default", pair[0], pair[1])
		}
	}
	var fe models.FieldErrors
	models.ValidateHats(table, &fe)
	if len(fe) != 0 {
		t.Fatalf("the defaults do not validate: %v", fe)
	}
}

// TestValidateHats names each bad entry by its field.
func TestValidateHats(t *testing.T) {
	var fe models.FieldErrors
	models.ValidateHats([]models.Hat{
		{Name: "tester", ConflictsWith: []string{"builder", "builder", "tester", "ghost"}},
		{Name: "Auditor"}, {Name: ""}, {Name: "tester"},
		{Name: "auditor", ConflictsWith: []string{"pilot"}},
	}, &fe)
	for _, k := range []string{"hats[0].conflicts_with[1]", "hats[0].conflicts_with[2]", "hats[0].conflicts_with[3]", "hats[1].name", "hats[2].name", "hats[3].name"} {
		if fe[k] == "" {
			t.Errorf("no error for %s: %v", k, fe)
		}
	}
	for _, k := range []string{"hats[0].conflicts_with[0]", "hats[4].name", "hats[4].conflicts_with[0]"} {
		if fe[k] != "" {
			t.Errorf("error for the valid %s: %s", k, fe[k])
		}
	}
}

// TestWornOnAndConflicts: hats come from the events that recorded them and the task's
// current parts; a role declared as a hat is put on with every part.
func TestWornOnAndConflicts(t *testing.T) {
	ev := func(hat string, who int64) models.Event {
		b, _ := json.Marshal(map[string]any{"hat": hat, "wearer_id": who})
		return models.Event{Type: "task.x", Data: b}
	}
	bob, vic, ann, rita := int64(1), int64(2), int64(3), int64(4)
	task := &models.Task{BuilderID: &ann, ApproverID: &rita}
	worn := models.WornOn(task, []models.Event{ev("builder", bob), ev("tester", vic), {Type: "task.created"}}, &vic)
	if !slices.Equal(worn[bob], []string{"builder"}) || !slices.Equal(worn[vic], []string{"pilot", "tester"}) ||
		!slices.Equal(worn[ann], []string{"builder"}) || !slices.Equal(worn[rita], []string{"reviewer"}) {
		t.Fatalf("worn %v", worn)
	}
	table := append(models.DefaultHats(), models.Hat{Name: "auditor", ConflictsWith: []string{"builder"}})
	if a, b, bad := models.HatConflictIn(table, worn[bob], []string{"tester"}); !bad || a != "tester" || b != "builder" {
		t.Fatalf("bob as tester: %q %q %v", a, b, bad)
	}
	if _, _, bad := models.HatConflictIn(table, worn[rita], []string{"tester"}); bad {
		t.Fatal("the reviewer may verify by default")
	}
	auditor := &models.Agent{Roles: []string{"developer", "auditor"}}
	put := append([]string{"builder"}, models.RoleHats(table, auditor)...)
	if _, _, bad := models.HatConflictIn(table, nil, put); !bad {
		t.Fatal("an auditor may build")
	}
	if hats := models.RoleHats(table, &models.Agent{Roles: []string{"tester"}}); len(hats) != 0 {
		t.Fatalf("a part hat worn by role: %v", hats)
	}
}
