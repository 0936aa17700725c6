package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/countersign/countersign/models/contract"
)

// Hat is a role a participant wears on one task (builder, tester, reviewer, …) and
// the hats the same participant may not also wear on that task.
type Hat struct {
	Name          string   `json:"name" yaml:"name"`
	ConflictsWith []string `json:"conflicts_with,omitempty" yaml:"conflicts_with,omitempty"`
}

// The part hats: a participant puts one on by taking that part in a task, whatever
// their roles.
const (
	// HatBuilder is worn by whoever starts a task and does its work (checked already
	// when the task is assigned to them).
	HatBuilder = "builder"
	// HatReviewer is worn by whoever approves or rejects a task in review.
	HatReviewer = "reviewer"
	// HatTester is worn by whoever verifies a task, rejects its verification or
	// accepts it blocked: the verifier wears it implicitly.
	HatTester = "tester"
	// HatPilot is worn on a spawned task by the agent on the task that spawned it
	// (see Task.SpawnedBy and PilotOf).
	HatPilot = "pilot"
)

// PartHats lists the part hats in the order a task meets them.
var PartHats = []string{HatPilot, HatBuilder, HatReviewer, HatTester}

// RuleHatConflict is the rule a move breaks when it would have one participant wear
// two conflicting hats on one task.
const RuleHatConflict = "hat_conflict"

// maxHats bounds the hat table.
const maxHats = 50

// DefaultHats is the hat table of the goal-verification design: the four part hats,
// and tester conflicting with builder — nobody tests what they built, on the task
// whatever its history (a builder replaced after a block still may not verify it, a
// verifier who rejected it may not take over building it). The other separations
// (approver ≠ builder, verifier ≠ approver in a team of three or more, the pilot
// never verifies) are rules of their own, which hold whatever the hat table says.
func DefaultHats() []Hat {
	return []Hat{
		{Name: HatBuilder},
		{Name: HatReviewer},
		{Name: HatTester, ConflictsWith: []string{HatBuilder}},
		{Name: HatPilot},
	}
}

// HatTable returns the rules' hats, DefaultHats when none are declared.
func (r ProjectRules) HatTable() []Hat {
	if len(r.Hats) == 0 {
		return DefaultHats()
	}
	return r.Hats
}

// HatsConflict reports whether hats a and b may not be worn by one participant on one
// task: either declares the other in its conflicts (a conflict goes both ways).
func HatsConflict(table []Hat, a, b string) bool {
	if a == b {
		return false
	}
	for _, h := range table {
		if h.Name == a && slices.Contains(h.ConflictsWith, b) || h.Name == b && slices.Contains(h.ConflictsWith, a) {
			return true
		}
	}
	return false
}

// hasConflicts reports whether hat conflicts with any hat of the table.
func hasConflicts(table []Hat, hat string) bool {
	for _, h := range table {
		if h.Name == hat && len(h.ConflictsWith) > 0 || slices.Contains(h.ConflictsWith, hat) {
			return true
		}
	}
	return false
}

// RoleHats are the hats a declares by its roles: each declared hat, other than the
// part hats, named like one of a's roles. A role declared as a hat is worn on every
// task a takes part in (as builder, reviewer, tester or pilot), so its conflicts
// decide which parts a may take.
func RoleHats(table []Hat, a *Agent) []string {
	var out []string
	for _, h := range table {
		if !slices.Contains(PartHats, h.Name) && a.HasRole(h.Name) {
			out = append(out, h.Name)
		}
	}
	return out
}

// ValidateHats checks a hat table into fe under hats[i].name and
// hats[i].conflicts_with[j]: names are roles (lower-case), declared once, and a
// conflict names another declared hat or a part hat.
func ValidateHats(table []Hat, fe *FieldErrors) {
	if len(table) > maxHats {
		fe.Add("hats", fmt.Sprintf("at most %d hats", maxHats))
		return
	}
	declared := map[string]bool{}
	for _, h := range table {
		declared[h.Name] = true
	}
	seen := map[string]bool{}
	for i, h := range table {
		key := "hats[" + strconv.Itoa(i) + "]"
		switch {
		case h.Name == "":
			fe.Add(key+".name", "is required")
		case !contract.ValidRole(h.Name):
			fe.Add(key+".name", "must be 1-32 lower-case letters, digits, '_' or '-' (a role name)")
		case seen[h.Name]:
			fe.Add(key+".name", quote(h.Name)+" is declared twice")
		}
		seen[h.Name] = true
		for j, c := range h.ConflictsWith {
			ck := key + ".conflicts_with[" + strconv.Itoa(j) + "]"
			switch {
			case c == h.Name:
				fe.Add(ck, "a hat cannot conflict with itself")
			case !declared[c] && !slices.Contains(PartHats, c):
				fe.Add(ck, "unknown hat "+quote(c)+"; declare it, or name a part hat (builder, reviewer, tester, pilot)")
			case slices.Contains(h.ConflictsWith[:j], c):
				fe.Add(ck, quote(c)+" is named twice")
			}
		}
	}
}

// Worn is what each participant wears on one task: agent id → hats, in the order of
// PartHats.
type Worn map[int64][]string

// Add records that agent id wears hat.
func (w Worn) Add(id int64, hat string) {
	if hat == "" || slices.Contains(w[id], hat) {
		return
	}
	hats := append(w[id], hat)
	slices.SortStableFunc(hats, func(a, b string) int { return hatOrder(a) - hatOrder(b) })
	w[id] = hats
}

func hatOrder(h string) int {
	if i := slices.Index(PartHats, h); i >= 0 {
		return i
	}
	return len(PartHats)
}

// WornOn returns the hats worn on t: those its events recorded (EventHat) — so a
// builder replaced after a block, or a verifier who rejected it, keeps the hat — plus
// its current builder, approver and verifier, and its pilot (nil: none). It does not
// know which id is the runner's: a caller showing or checking it leaves the runner
// out, who wears no hat.
func WornOn(t *Task, events []Event, pilot *int64) Worn {
	w := Worn{}
	for _, e := range events {
		if hat, who, ok := EventHat(e); ok {
			w.Add(who, hat)
		}
	}
	for _, f := range []struct {
		id  *int64
		hat string
	}{{pilot, HatPilot}, {t.BuilderID, HatBuilder}, {t.ApproverID, HatReviewer}, {t.VerifierID, HatTester}} {
		if f.id != nil {
			w.Add(*f.id, f.hat)
		}
	}
	return w
}

// hatData is what a task event records of the hat its move put on.
type hatData struct {
	Hat    string `json:"hat"`
	Wearer int64  `json:"wearer_id"`
}

// EventHat returns the hat a task event's move put on and who wore it (the actor, or
// for a start by the runner the builder), when the event recorded one.
func EventHat(e Event) (hat string, wearer int64, ok bool) {
	if len(e.Data) == 0 {
		return "", 0, false
	}
	var d hatData
	if json.Unmarshal(e.Data, &d) != nil || d.Hat == "" || d.Wearer == 0 {
		return "", 0, false
	}
	return d.Hat, d.Wearer, true
}

// HatConflictIn returns the first pair of hats in worn that conflict in the table,
// one of them among putOn (the hats the move puts on, with the wearer's role hats):
// only a move that adds a hat can break the rule.
func HatConflictIn(table []Hat, worn, putOn []string) (a, b string, ok bool) {
	all := append(slices.Clone(worn), putOn...)
	for _, p := range putOn {
		for _, o := range all {
			if HatsConflict(table, p, o) {
				return p, o, true
			}
		}
	}
	return "", "", false
}
