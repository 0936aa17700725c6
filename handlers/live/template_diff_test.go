package live

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// TestTemplateChangeWithoutDiff: the stream, one message for every session, sends a
// template change without its diff (both versions' YAML, held-out tests included),
// keeping what changed; other events keep their data.
func TestTemplateChangeWithoutDiff(t *testing.T) {
	log := handlertest.DiscardLog()
	data, _ := json.Marshal(models.Change{By: "eve", Name: "calc", Version: 2, FromVersion: 1, Changed: []string{"steps[0]"},
		Diff: "+      content: HELDOUT_SECRET\n"})
	ev := models.Event{ID: 7, Type: models.EventTemplateChanged, Data: data}
	got := string(encodeEvent(&ev, log))
	if strings.Contains(got, "HELDOUT_SECRET") || strings.Contains(got, `"diff"`) || !strings.Contains(got, `"changed":["steps[0]"]`) {
		t.Fatalf("template change on the stream: %s", got)
	}
	if !strings.Contains(string(ev.Data), "HELDOUT_SECRET") {
		t.Fatal("encoding changed the event itself")
	}
	other := models.Event{ID: 8, Type: "task.created", Data: json.RawMessage(`{"diff":"kept"}`)}
	if got := string(encodeEvent(&other, log)); !strings.Contains(got, `"diff":"kept"`) {
		t.Fatalf("another event lost its data: %s", got)
	}
}
