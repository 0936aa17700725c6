package runner

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/triage"
)

// scriptedMessages is a Messages API whose replies are chosen by the task title the
// request names: a reply per title, counted per title.
type scriptedMessages struct {
	mu      sync.Mutex
	replies map[string]string
	calls   map[string]int
}

func (s *scriptedMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := "no task I know"
	for title, rep := range s.replies {
		if strings.Contains(string(body), title) {
			s.calls[title]++
			reply = rep
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-1",
		"content":     []map[string]any{{"type": "text", "text": reply}},
		"stop_reason": "end_turn",
		"usage":       map[string]any{"input_tokens": 1200, "output_tokens": 80},
	})
}

func (s *scriptedMessages) count(title string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[title]
}

// TestTriageDecidesBeforeAPerson: with a scripted Messages API, a task whose triage
// says retry runs once more with the approach in its brief and is verified; one whose
// triage says escalate is blocked with the summary and recommendation on its inbox
// item; triage answering garbage escalates with its error; and triage never runs twice
// on one task, even when the extra attempt fails.
func TestTriageDecidesBeforeAPerson(t *testing.T) {
	api := &scriptedMessages{calls: map[string]int{}, replies: map[string]string{
		"retry me":      `{"action":"retry","approach":"Write the report after reading APPROACH-X first."}`,
		"retry in vain": `{"action":"retry","approach":"Try harder."}`,
		"escalate me":   "Here you go:\n" + `{"action":"escalate","summary":"The spec contradicts the tests.","recommend":"reassign","role":"architect"}`,
		"garbage":       `I think it should probably be retried?`,
	}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	a, err := evaluator.NewAnthropic(evaluator.AnthropicConfig{APIKey: "sk-test", Model: "claude-opus-4-1", BaseURL: srv.URL, MaxRetries: -1})
	must(t, err)
	h := newHarness(t, "sqlite", func(c *Config) { c.Triage = triage.Anthropic{API: a} })
	// Fails unless its brief holds the approach the triage of "retry me" gives.
	h.worker("dev", "developer", `brief=$(cat); case "$brief" in *APPROACH-X*) `+
		`printf '%0120d\n' 0 > "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE;; *) echo "I cannot do this"; exit 1;; esac`)
	c := fileContract()
	c.Completion.MaxAttempts = 2
	ids := map[string]int64{}
	for title := range api.replies {
		ids[title] = h.task(title, "developer", c).ID
	}
	h.start()

	retried := h.wait(ids["retry me"], models.TaskVerified)
	if retried.Triage == nil || retried.Triage.Status != models.TriageRetry {
		t.Fatalf("retried task's triage: %+v", retried.Triage)
	}
	att := h.attempts(retried.ID)
	if len(att) != 3 || !att[2].Triage || att[0].Triage || !strings.Contains(att[2].Brief, "APPROACH-X") {
		t.Fatalf("attempts of the retried task: %d, last triage %v", len(att), len(att) == 3 && att[2].Triage)
	}
	if u := att[1].Usage; u == nil || !strings.Contains(u.Note, "triage") || u.InputTokens == nil || *u.InputTokens < 1200 {
		t.Fatalf("the triage's usage is not charged to the last failed attempt: %+v", u)
	}

	for title, want := range map[string]string{"escalate me": models.TriageEscalate, "garbage": models.TriageFailed, "retry in vain": models.TriageRetry} {
		blocked := h.wait(ids[title], models.TaskBlocked)
		if blocked.Triage == nil || blocked.Triage.Status != want {
			t.Fatalf("%s: triage %+v, want %s", title, blocked.Triage, want)
		}
		items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: blocked.ID, Kind: models.InboxBlocked})
		must(t, err)
		var p models.BlockedPayload
		if len(items) != 1 || json.Unmarshal(items[0].Payload, &p) != nil || p.Triage == nil || p.Triage.Status != want {
			t.Fatalf("%s: inbox %+v", title, items)
		}
		if title == "escalate me" && (p.Triage.Summary != "The spec contradicts the tests." || p.Triage.Recommend != models.RecommendReassign || p.Triage.Role != "architect") {
			t.Fatalf("escalation on the inbox item: %+v", p.Triage)
		}
		if title == "garbage" && !strings.Contains(p.Triage.Error, "malformed") {
			t.Fatalf("garbage triage's error: %q", p.Triage.Error)
		}
	}
	if n := len(h.attempts(ids["retry in vain"])); n != 3 {
		t.Fatalf("the task whose extra attempt failed made %d attempts", n)
	}
	for title := range api.replies {
		if n := api.count(title); n != 1 {
			t.Fatalf("%s was triaged %d times", title, n)
		}
	}
}
