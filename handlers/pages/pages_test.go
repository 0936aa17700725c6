package pages_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

const xss = `<script>alert(1)</script>`

// TestPagesRender renders every core page over a database with a goal waiting for
// verification, a blocked task and hostile text, and checks that the text is escaped.
func TestPagesRender(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("Goal " + xss)
	other := &models.Goal{Title: "Other " + xss}
	if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, other); err != nil {
		t.Fatal(err)
	}
	bt := e.blockedTask("Blocked "+xss, &other.ID)
	ht := e.humanTask("Human "+xss, nil, models.TaskReview)
	b := e.browser().login("lead")
	paths := []string{"/", "/goals", "/goals/new", "/goals/" + itoa64(g.ID), "/tasks", "/tasks?state=blocked",
		"/tasks/" + itoa64(bt.ID), "/tasks/" + itoa64(ht.ID), "/inbox"}
	for _, p := range paths {
		r := b.get(p)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d\n%s", p, r.Status, r.Body)
		}
		if strings.Contains(r.Body, xss) {
			t.Errorf("GET %s: markup rendered unescaped", p)
		}
	}
	for _, p := range []string{"/goals", "/goals/" + itoa64(g.ID), "/tasks", "/tasks/" + itoa64(bt.ID), "/inbox"} {
		if r := b.get(p); !strings.Contains(r.Body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s: escaped title missing", p)
		}
	}
	// The brief with markup too.
	r := b.get("/tasks/" + itoa64(ht.ID))
	if !strings.Contains(r.Body, "Brief of Human &lt;script&gt;") {
		t.Errorf("task brief not shown escaped")
	}
	// The goal page offers the lead the verify and reject forms.
	r = b.get("/goals/" + itoa64(g.ID))
	for _, id := range []string{"goal-verify-form", "goal-reject-form", `data-testid="goal-state"`} {
		if !strings.Contains(r.Body, id) {
			t.Errorf("goal page misses %s", id)
		}
	}
	// The inbox shows the exact criteria, paths expanded, and every attempt.
	r = b.get("/inbox")
	for _, want := range []string{`<dt>path</dt><dd><code>out/` + itoa64(bt.ID) + ".md</code>", "go test ./... exited 1", "is missing", `data-testid="inbox-form-retry"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("inbox misses %q", want)
		}
	}
	if strings.Contains(r.Body, contract.TaskIDPlaceholder) {
		t.Error("the inbox shows an unexpanded {task_id}")
	}
	// So does the task page's contract.
	if r = b.get("/tasks/" + itoa64(bt.ID)); strings.Contains(r.Body, contract.TaskIDPlaceholder) || !strings.Contains(r.Body, "out/"+itoa64(bt.ID)+".md") {
		t.Error("the task page shows an unexpanded {task_id}")
	}
}
