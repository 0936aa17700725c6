package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// Held-out tests leave the server only for the readers who may set them: every task,
// goal status and template a handler returns goes through these first. The rule is
// models.Task.ForReader's (admin, editor or lead, not through an attempt token, or the
// runner); everyone else gets the contract Redacted: no paths, no contents, only
// held_out_count.

// TaskFor returns t as reader may see it (nil stays nil).
func TaskFor(reader *models.Agent, t *models.Task) *models.Task {
	if t == nil {
		return nil
	}
	r := t.ForReader(reader)
	return &r
}

// TasksFor returns tasks as reader may see them, in a new slice.
func TasksFor(reader *models.Agent, tasks []models.Task) []models.Task {
	if tasks == nil {
		return nil
	}
	out := make([]models.Task, len(tasks))
	for i := range tasks {
		out[i] = tasks[i].ForReader(reader)
	}
	return out
}

// GoalStatusFor returns the goal's status with its tasks as reader may see them.
func GoalStatusFor(reader *models.Agent, st *models.GoalStatus) *models.GoalStatus {
	if st == nil {
		return nil
	}
	cp := *st
	cp.Tasks = TasksFor(reader, st.Tasks)
	return &cp
}

// MayReadHeldOut reports whether reader reads held-out tests (paths and contents).
func MayReadHeldOut(reader *models.Agent) bool {
	probe := models.Task{Contract: contract.Contract{Verification: contract.Verification{HeldOut: []contract.HeldOutTest{{}}}}}
	return len(probe.ForReader(reader).Contract.Verification.HeldOut) == 1
}

// TemplateFor returns the template as reader may see it: each step's contract
// Redacted for a reader who may not read held-out tests (a template's steps carry them
// into the tasks of every run). The template given is not changed.
func TemplateFor(reader *models.Agent, t *models.Template) *models.Template {
	if t == nil || MayReadHeldOut(reader) || !TemplateHasHeldOut(t) {
		return t
	}
	cp := *t
	cp.Steps = make([]models.Step, len(t.Steps))
	for i, st := range t.Steps {
		c := st.Contract().Redacted()
		st.Completion, st.Verification, st.Review = c.Completion, c.Verification, c.Review
		cp.Steps[i] = st
	}
	return &cp
}

// TemplatesFor returns templates as reader may see them, in a new slice.
func TemplatesFor(reader *models.Agent, ts []models.Template) []models.Template {
	if ts == nil {
		return nil
	}
	out := make([]models.Template, len(ts))
	for i := range ts {
		out[i] = *TemplateFor(reader, &ts[i])
	}
	return out
}

// TemplateHasHeldOut reports whether any step of t carries held-out tests.
func TemplateHasHeldOut(t *models.Template) bool {
	for _, st := range t.Steps {
		if len(st.Verification.HeldOut) > 0 {
			return true
		}
	}
	return false
}

// TemplateChangeDiffs hides, from a reader who may not read held-out tests, the diff
// of every template.changed event whose template carries held-out tests on either
// side of the change: the event's diff is the YAML of both versions, held-out
// contents included. What changed (the steps) and who changed it stay. Versions are
// looked up once per call.
type TemplateChangeDiffs struct {
	store  models.Store
	reader *models.Agent
	open   bool
	seen   map[string]bool // "name\x00version" → carries held-out tests
}

// NewTemplateChangeDiffs returns the filter for reader.
func NewTemplateChangeDiffs(store models.Store, reader *models.Agent) *TemplateChangeDiffs {
	return &TemplateChangeDiffs{store: store, reader: reader, open: MayReadHeldOut(reader), seen: map[string]bool{}}
}

// Hides reports whether the diff of a change of template name from version from to
// version to must be hidden from the reader. A version that cannot be read counts as
// carrying held-out tests.
func (f *TemplateChangeDiffs) Hides(ctx context.Context, name string, from, to int) bool {
	if f.open {
		return false
	}
	for _, v := range []int{from, to} {
		if v <= 0 {
			continue
		}
		key := name + "\x00" + strconv.Itoa(v)
		held, ok := f.seen[key]
		if !ok {
			t, err := f.store.GetTemplate(ctx, name, v)
			held = err != nil || TemplateHasHeldOut(t)
			f.seen[key] = held
		}
		if held {
			return true
		}
	}
	return false
}

// Event returns e with its diff removed when Hides says so; other events are
// returned as they are.
func (f *TemplateChangeDiffs) Event(ctx context.Context, e models.Event) models.Event {
	if f.open || e.Type != models.EventTemplateChanged || len(e.Data) == 0 {
		return e
	}
	var ch models.Change
	if err := json.Unmarshal(e.Data, &ch); err != nil {
		e.Data = nil // unreadable: keep nothing rather than leak
		return e
	}
	if ch.Diff == "" || !f.Hides(ctx, ch.Name, ch.FromVersion, ch.Version) {
		return e
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(e.Data, &data); err != nil {
		e.Data = nil
		return e
	}
	delete(data, "diff")
	data["diff_hidden"] = json.RawMessage(`"the template carries held-out tests"`)
	e.Data, _ = json.Marshal(data)
	return e
}

// TemplateYAML is models.MarshalTemplateYAML of t, headed by a comment naming the
// held-out tests a redacted t no longer carries (YAML has no held_out_count): such a
// file is for reading, and saving it back would drop them.
func TemplateYAML(t *models.Template) ([]byte, error) {
	b, err := models.MarshalTemplateYAML(t)
	if err != nil {
		return nil, err
	}
	var head []byte
	for i, st := range t.Steps {
		if n := st.Verification.HeldOutCount; n > 0 && len(st.Verification.HeldOut) == 0 {
			head = fmt.Appendf(head, "# steps[%d] has %d held-out test(s), hidden: only an admin, editor or lead reads them.\n", i, n)
		}
	}
	return append(head, b...), nil
}
