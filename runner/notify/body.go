package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// Body is the JSON a webhook receives, in the Standard Webhooks shape (type,
// timestamp, data) with a Slack-compatible text beside it, so that a Slack incoming
// webhook can be an endpoint as it is.
type Body struct {
	Type      string    `json:"type"`      // the notification: task.blocked, budget.stopped, …
	Timestamp time.Time `json:"timestamp"` // when the event happened
	Data      Data      `json:"data"`
	Text      string    `json:"text"` // one line for people, with a Slack link to the page
}

// Data is what the notification is about.
type Data struct {
	EventID   int64           `json:"event_id"`   // Countersign's event (GET /api/v1/events)
	EventType string          `json:"event_type"` // that event's type
	URL       string          `json:"url"`        // the page to open: the task's, else the goal's
	TaskID    *int64          `json:"task_id,omitempty"`
	TaskTitle string          `json:"task_title,omitempty"`
	GoalID    *int64          `json:"goal_id,omitempty"`
	GoalTitle string          `json:"goal_title,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"` // the event's data
}

// BuildBody turns a delivery's stored facts into the bytes sent, the same on every
// attempt for one base URL.
func BuildBody(baseURL string, facts json.RawMessage) ([]byte, error) {
	var f models.HookFacts
	if err := json.Unmarshal(facts, &f); err != nil {
		return nil, fmt.Errorf("notify: delivery payload: %w", err)
	}
	base := strings.TrimRight(baseURL, "/")
	link := base + "/inbox"
	switch {
	case f.TaskID != nil:
		link = fmt.Sprintf("%s/tasks/%d", base, *f.TaskID)
	case f.GoalID != nil:
		link = fmt.Sprintf("%s/goals/%d", base, *f.GoalID)
	}
	b := Body{Type: f.Event, Timestamp: f.At.UTC(), Data: Data{EventID: f.EventID, EventType: f.EventType, URL: link,
		TaskID: f.TaskID, TaskTitle: f.TaskTitle, GoalID: f.GoalID, GoalTitle: f.GoalTitle, Detail: f.Detail}}
	b.Text = text(f, link)
	return json.Marshal(b)
}

// happened is what each notification says happened to its task or goal.
var happened = map[string]string{
	models.HookTaskBlocked:       "is blocked and waits in the inbox",
	models.HookTaskEscalated:     "was escalated to the lead after two rejections",
	models.HookQuestionAsked:     "has a question for a person",
	models.HookGoalPendingVerify: "is ready for a lead to verify",
	models.HookBudgetStopped:     "was stopped by a budget",
}

// text is the line for people: what happened to which task or goal, with a link in
// Slack's <url|label> form.
func text(f models.HookFacts, link string) string {
	what := happened[f.Event]
	if what == "" {
		what = f.Event
	}
	subject := "Countersign"
	switch {
	case f.TaskID != nil:
		subject = fmt.Sprintf("Task %d", *f.TaskID)
		if f.TaskTitle != "" {
			subject += " “" + slackEscape(f.TaskTitle) + "”"
		}
	case f.GoalID != nil:
		subject = fmt.Sprintf("Goal %d", *f.GoalID)
		if f.GoalTitle != "" {
			subject += " “" + slackEscape(f.GoalTitle) + "”"
		}
	}
	return fmt.Sprintf("%s %s: <%s|open>", subject, what, link)
}

// slackEscape escapes what Slack's mrkdwn reads as control characters.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(contract.Truncate(s, 200))
}
