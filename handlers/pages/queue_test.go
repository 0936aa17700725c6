package pages_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// queueItems returns the data-testid keys of the queue items of a page, in order.
func queueItems(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`data-testid="queue-item-([a-z_]+-\d+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// section returns the HTML of body from the element with data-testid id to the next
// queue item (or the end).
func section(body, id string) string {
	i := strings.Index(body, `data-testid="`+id+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i+1:]
	if j := strings.Index(rest, `data-testid="queue-item-`); j >= 0 {
		return rest[:j]
	}
	return rest
}

// TestQueuePage: "Waiting on you" lists what each person may act on, why and since
// when, with one primary action and the rest behind a menu; destructive ones confirm;
// the nav counts it; the overview starts with it; a form returns to the queue.
func TestQueuePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("Ship the dark mode")
	bt := e.blockedTask("Write the report", nil)
	done := e.humanTask("Check the toggle", nil, models.TaskCompleted) // built by dev, verified by a tester

	lead := e.browser().login("lead")
	r := lead.get("/queue")
	items := queueItems(r.Body)
	goalKey, blockedKey := "goal_verify-"+itoa64(g.ID), "blocked-"+itoa64(bt.ID)
	if !contains(items, goalKey) || !contains(items, blockedKey) || contains(items, "verify-"+itoa64(done.ID)) {
		t.Fatalf("lead's queue %v, want the goal and the blocked task and not the tester's verification", items)
	}
	gi := section(r.Body, "queue-item-"+goalKey)
	for _, want := range []string{`<time datetime="`, "waits for a lead", `data-testid="queue-verify-goal"`, `name="notes"`,
		`value="/queue"`, `<details class="queue-menu"`, "Reject with fix tasks"} {
		if !strings.Contains(gi, want) {
			t.Errorf("goal item misses %q:\n%s", want, gi)
		}
	}
	bi := section(r.Body, "queue-item-"+blockedKey)
	if !strings.Contains(bi, `data-testid="queue-retry"`) || !regexp.MustCompile(`data-confirm="[^"]+"\s+data-testid="queue-cancel"`).MatchString(bi) {
		t.Errorf("blocked item: no retry, or a cancel without confirmation:\n%s", bi)
	}
	if got := regexp.MustCompile(`data-testid="nav-queue-count"[^>]*>(\d+)<`).FindStringSubmatch(r.Body); got == nil || got[1] != itoa64(int64(len(items))) {
		t.Errorf("nav count %v, want %d", got, len(items))
	}

	// The overview starts with the queue.
	home := lead.get("/").Body
	if i, j := strings.Index(home, `data-testid="overview-queue"`), strings.Index(home, `data-testid="task-stats"`); i < 0 || i > j {
		t.Errorf("the overview does not start with the queue (at %d, the counts at %d)", i, j)
	}

	// The count as live.js reads it.
	var n struct{ Count int }
	if c := lead.do("GET", "/queue/count", nil, nil); c.Status != 200 || json.Unmarshal([]byte(c.Body), &n) != nil || n.Count != len(items) {
		t.Errorf("/queue/count: %d %s, want %d", c.Status, c.Body, len(items))
	}

	// The tester sees the verification, the builder does not; neither sees the goal.
	tester := e.browser().login("tester")
	if ti := queueItems(tester.get("/queue").Body); !contains(ti, "verify-"+itoa64(done.ID)) || contains(ti, goalKey) {
		t.Errorf("tester's queue %v", ti)
	}
	if di := queueItems(e.browser().login("dev").get("/queue").Body); contains(di, "verify-"+itoa64(done.ID)) || contains(di, goalKey) {
		t.Errorf("builder's queue %v lists verifying its own work", di)
	}
	// The task page says who it waits on.
	if body := lead.get("/tasks/" + itoa64(done.ID)).Body; !strings.Contains(body, "Waiting on: <strong>the tester role (tester), to verify it</strong>") {
		t.Errorf("task page misses who it waits on:\n%s", section(body, "task-waiting-on"))
	}

	// Verifying the goal from the queue returns to the queue, without the goal.
	res := lead.post("/goals/"+itoa64(g.ID)+"/verify", url.Values{"notes": {"Clicked through it"}, "back": {"/queue"}})
	if res.Status != http.StatusSeeOther || res.Header.Get("Location") != "/queue" {
		t.Fatalf("verify from the queue: %d to %q", res.Status, res.Header.Get("Location"))
	}
	if contains(queueItems(lead.get("/queue").Body), goalKey) {
		t.Error("the verified goal still waits")
	}
}

// TestConfirmations: cancel, dismiss, reject goal and remove step ask before they
// submit, on the task, inbox, goal and template pages (data-confirm, static/confirm.js).
func TestConfirmations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("Confirm goal")
	bt := e.blockedTask("Confirm task", nil)
	b := e.browser().login("lead")
	confirmed := func(page, testid string) {
		t.Helper()
		body := b.get(page).Body
		re := regexp.MustCompile(`<button[^>]*data-confirm="[^"]+"[^>]*data-testid="` + regexp.QuoteMeta(testid) + `"`)
		if !re.MatchString(body) {
			t.Errorf("%s: %s asks no confirmation", page, testid)
		}
		if !strings.Contains(body, "/static/confirm.js") {
			t.Errorf("%s does not load confirm.js", page)
		}
	}
	confirmed("/tasks/"+itoa64(bt.ID), "action-cancel")
	confirmed("/inbox", "inbox-cancel")
	confirmed("/goals/"+itoa64(g.ID), "goal-reject")
	confirmed("/queue", "queue-cancel")
	confirmed("/templates/new", "op-remove-0") // a new template starts with one step
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
