package runner

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
)

// TestWorkersAskAndPeopleAnswer: a worker asks a person a question — on its last
// output line, or through the API with its attempt token — and stops; the task waits
// with its lease released and no attempt used, a question sits in the inbox; the
// answer sends it back to its worker, whose next brief holds the question and the
// answer, and the task completes.
func TestWorkersAskAndPeopleAnswer(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	api := httptest.NewServer(handlers.NewServer(handlers.Deps{Service: h.svc, Log: h.cfg.Log}))
	t.Cleanup(api.Close)
	h.cfg.APIURL = api.URL
	// Both workers finish once their brief holds the answer; until then one asks on
	// its last line, the other through the API.
	done := `printf '%0120d\n' 0 > "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE`
	h.worker("liner", "developer", `brief=$(cat); case "$brief" in *PostgreSQL-please*) `+done+`;; *) echo "thinking"; echo "QUESTION: Which database should I use?";; esac`)
	h.worker("caller", "writer", `brief=$(cat); case "$brief" in *British-spelling*) `+done+`;; *) `+
		`curl -sf -X POST -H "Authorization: Bearer $COUNTERSIGN_TOKEN" -H 'Content-Type: application/json' `+
		`-d '{"question":"British or American spelling?"}' "$COUNTERSIGN_URL/api/v1/tasks/$COUNTERSIGN_TASK_ID/questions" >/dev/null || echo "the API refused"; exit 1;; esac`)
	line := h.task("pick a database", "developer", fileContract())
	call := h.task("write the docs", "writer", fileContract())
	h.start()

	for _, tc := range []struct {
		task     *models.Task
		question string
		answer   string
	}{{line, "Which database should I use?", "PostgreSQL-please"}, {call, "British or American spelling?", "British-spelling"}} {
		waiting := h.wait(tc.task.ID, models.TaskWaiting)
		q := waiting.OpenQuestion()
		if q == nil || q.Text != tc.question || waiting.AttemptsUsed != 0 || waiting.LeaseOwner != "" {
			t.Fatalf("waiting task %d: question %+v, attempts used %d, lease %q", tc.task.ID, q, waiting.AttemptsUsed, waiting.LeaseOwner)
		}
		if a := h.attempts(tc.task.ID); len(a) != 1 || a[0].Outcome != models.OutcomeQuestion {
			t.Fatalf("attempts of task %d: %+v", tc.task.ID, a)
		}
		if n := h.openInbox(tc.task.ID, models.InboxQuestion); n != 1 {
			t.Fatalf("task %d: %d open questions in the inbox", tc.task.ID, n)
		}
		_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, tc.task.ID, models.ActAnswer, models.ActionInput{Answer: tc.answer})
		must(t, err)
		h.wait(tc.task.ID, models.TaskVerified)
		b := h.brief(tc.task.ID, 2)
		if !strings.Contains(b, tc.question) || !strings.Contains(b, tc.answer) {
			t.Fatalf("the next brief lacks the question or the answer:\n%s", b)
		}
		if n := h.openInbox(tc.task.ID, models.InboxQuestion); n != 0 {
			t.Fatalf("task %d: the answered question stays open", tc.task.ID)
		}
	}
	// An empty answer is refused and changes nothing.
	if _, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, line.ID, models.ActAnswer, models.ActionInput{Answer: " "}); models.ErrorCode(err) != models.ECONFLICT && models.ErrorCode(err) != models.EINVALID {
		t.Fatalf("answering a verified task: %v", err)
	}
}
