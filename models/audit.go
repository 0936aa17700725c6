package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/models/contract"
)

// Event types of the audit trail of what steers the runner: each change of the project
// rules and each new template version, with a diff.
const (
	EventRulesChanged    = "rules.changed"
	EventTemplateChanged = "template.changed"
)

// Change is the data of an audit event: who made it, the fields that differ and a
// unified line diff (TextDiff, at most DiffLimit bytes) of the YAML before and after.
// Name, Version and FromVersion describe a template change (FromVersion 0: a new
// template); they are empty for the rules.
type Change struct {
	By          string   `json:"by"`
	Name        string   `json:"name,omitempty"`
	Version     int      `json:"version,omitempty"`
	FromVersion int      `json:"from_version,omitempty"`
	Changed     []string `json:"changed"`
	Diff        string   `json:"diff"`
}

// HistoryEntry is one change of an audit history: its event and what it recorded.
type HistoryEntry struct {
	EventID int64
	At      time.Time
	Change  Change
}

// historyPage is how many events a history reads at a time.
const historyPage = 200

// RulesHistory returns the newest limit changes of the project rules, newest first.
func (s *TemplateService) RulesHistory(ctx context.Context, limit int) ([]HistoryEntry, error) {
	return s.history(ctx, EventRulesChanged, limit, func(Change) bool { return true })
}

// TemplateHistory returns the newest limit changes (versions saved) of the template
// name, newest first.
func (s *TemplateService) TemplateHistory(ctx context.Context, name string, limit int) ([]HistoryEntry, error) {
	return s.history(ctx, EventTemplateChanged, limit, func(c Change) bool { return c.Name == name })
}

// history reads events of type typ newest first, a page at a time, and returns the
// first limit whose change keep accepts.
func (s *TemplateService) history(ctx context.Context, typ string, limit int, keep func(Change) bool) ([]HistoryEntry, error) {
	var out []HistoryEntry
	before := int64(0)
	for len(out) < limit {
		evs, err := s.store.ListEventsOfType(ctx, typ, before, historyPage)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			var c Change
			if err := json.Unmarshal(e.Data, &c); err != nil || !keep(c) {
				continue
			}
			if out = append(out, HistoryEntry{EventID: e.ID, At: e.CreatedAt, Change: c}); len(out) == limit {
				break
			}
		}
		if len(evs) < historyPage {
			break
		}
		before = evs[len(evs)-1].ID
	}
	return out, nil
}

// rulesChange describes the change from the rules before to after.
func rulesChange(actor *Agent, before, after *ProjectRules) (Change, error) {
	b, err := rulesYAML(before)
	if err != nil {
		return Change{}, err
	}
	a, err := rulesYAML(after)
	if err != nil {
		return Change{}, err
	}
	return Change{By: actor.Name, Changed: rulesFieldsChanged(before, after), Diff: TextDiff(b, a, DiffLimit)}, nil
}

// rulesYAML writes the rules as YAML indented like a template file (activities in
// name order).
func rulesYAML(r *ProjectRules) (string, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	err := enc.Close()
	return buf.String(), err
}

// rulesFieldsChanged names what differs: each activity added, removed or given
// another command (activities.<name>), each other field (the hat table as it applies:
// saving the defaults explicitly changes nothing), and each stack added, removed or
// changed (stacks.<name>).
func rulesFieldsChanged(before, after *ProjectRules) []string {
	out := []string{}
	all := map[string]string{}
	maps.Copy(all, before.Activities)
	maps.Copy(all, after.Activities)
	for _, n := range slices.Sorted(maps.Keys(all)) {
		old, inBefore := before.Activities[n]
		cmd, inAfter := after.Activities[n]
		if inBefore != inAfter || old != cmd {
			out = append(out, "activities."+n)
		}
	}
	if !slices.EqualFunc(before.FilePatterns, after.FilePatterns, func(x, y contract.FilePatternRule) bool {
		return x.Pattern == y.Pattern && x.Timing == y.Timing && slices.Equal(x.Activities, y.Activities)
	}) {
		out = append(out, "file_patterns")
	}
	for _, f := range []struct {
		name string
		x, y []string
	}{{"always", before.Always, after.Always}, {"advisory_words", before.AdvisoryWords, after.AdvisoryWords}, {"skip_words", before.SkipWords, after.SkipWords}} {
		if !slices.Equal(f.x, f.y) {
			out = append(out, f.name)
		}
	}
	if !reflect.DeepEqual(before.HatTable(), after.HatTable()) {
		out = append(out, "hats")
	}
	if before.PromptForAdvisory != after.PromptForAdvisory {
		out = append(out, "prompt_for_advisory")
	}
	return append(out, stacksChanged(before.Stacks, after.Stacks)...)
}

// stacksChanged names each stack added, removed or changed (stacks.<name>), in the
// order of after, then those removed.
func stacksChanged(before, after []contract.Stack) []string {
	var out []string
	find := func(list []contract.Stack, name string) *contract.Stack {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	same := func(a, b *contract.Stack) bool {
		x, errX := json.Marshal(a)
		y, errY := json.Marshal(b)
		return errX == nil && errY == nil && string(x) == string(y)
	}
	for i := range after {
		if b := find(before, after[i].Name); b == nil || !same(b, &after[i]) {
			out = append(out, "stacks."+after[i].Name)
		}
	}
	for i := range before {
		if find(after, before[i].Name) == nil {
			out = append(out, "stacks."+before[i].Name)
		}
	}
	return out
}

// templateChange describes the new version t of a template whose previous version
// is prev (nil for a new template).
func templateChange(actor *Agent, prev, t *Template) (Change, error) {
	c := Change{By: actor.Name, Name: t.Name, Version: t.Version, Changed: []string{}}
	before := ""
	if prev != nil {
		c.FromVersion = prev.Version
		b, err := templateYAML(prev)
		if err != nil {
			return Change{}, err
		}
		before = b
	}
	after, err := templateYAML(t)
	if err != nil {
		return Change{}, err
	}
	c.Changed = templateFieldsChanged(prev, t)
	c.Diff = TextDiff(before, after, DiffLimit)
	return c, nil
}

// templateYAML is the YAML file of t without its version, which every new version
// changes and the event names anyway.
//
// A held-out test's content is replaced by its SHA-256: the event is read by anyone who
// reads the feed, and the diff still shows that (and where) a held-out test changed.
func templateYAML(t *Template) (string, error) {
	cp := *t
	cp.Version = 0
	cp.Steps = slices.Clone(t.Steps)
	for i, st := range cp.Steps {
		if len(st.Verification.HeldOut) == 0 {
			continue
		}
		held := slices.Clone(st.Verification.HeldOut)
		for j, h := range held {
			sum := sha256.Sum256([]byte(h.Content))
			held[j].Content = "(held out, sha256 " + hex.EncodeToString(sum[:]) + ")"
		}
		cp.Steps[i].Verification.HeldOut = held
	}
	b, err := MarshalTemplateYAML(&cp)
	return string(b), err
}

// templateFieldsChanged names what differs between two versions: the description and
// each step that differs, was added or was removed (steps[i]); everything for a new
// template.
func templateFieldsChanged(prev, t *Template) []string {
	out := []string{}
	if prev == nil {
		prev = &Template{}
	}
	if prev.Description != t.Description {
		out = append(out, "description")
	}
	for i := range max(len(prev.Steps), len(t.Steps)) {
		if i >= len(prev.Steps) || i >= len(t.Steps) || !sameStep(prev.Steps[i], t.Steps[i]) {
			out = append(out, fmt.Sprintf("steps[%d]", i))
		}
	}
	return out
}

// sameStep compares two steps by their JSON.
func sameStep(a, b Step) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}
