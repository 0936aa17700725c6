package pages_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// TestLedgerPageShowsATasksChain: /ledger?task=ID lists that task's completion, the
// revocation a reopen wrote (linking what it revokes) and the completion after it,
// each completion with its kind badge; a malformed filter is a 422.
func TestLedgerPageShowsATasksChain(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	tk := e.humanTask("Chain", nil, models.TaskVerified)
	e.humanTask("Other", nil, models.TaskVerified)
	e.act("lead", tk.ID, models.ActReopen, models.ActionInput{Reason: "regressed"})
	e.act("dev", tk.ID, models.ActSubmit, models.ActionInput{Summary: "again"})
	e.act("reviewer", tk.ID, models.ActApprove, models.ActionInput{})
	e.act("tester", tk.ID, models.ActVerify, models.ActionInput{Notes: "works again"})
	pub := ledger.NewPublisher(e.db, ledger.NewLocal(e.db), ledger.Options{})
	if _, err := pub.Drain(e.ctx()); err != nil {
		t.Fatal(err)
	}
	chain, err := e.db.ListLedger(e.ctx(), models.LedgerFilter{TaskID: tk.ID})
	must(t, err)
	if len(chain) != 3 || chain[1].Type != models.LedgerTaskRevoked {
		t.Fatalf("chain %+v", chain)
	}
	lead := e.browser().login("lead")
	pg := lead.get("/ledger?task=" + itoa64(tk.ID))
	for _, want := range []string{"The chain of task #" + itoa64(tk.ID), `data-testid="ledger-kind-` + itoa64(chain[0].ID) + `"`,
		`data-state="advisory"`, `data-testid="ledger-revokes-` + itoa64(chain[1].ID) + `"`, `href="/ledger/` + itoa64(chain[0].ID) + `"`,
		`data-testid="ledger-row-` + itoa64(chain[2].ID) + `"`} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the task's chain lacks %q", want)
		}
	}
	if strings.Count(pg.Body, `data-testid="ledger-row-`) != 3 {
		t.Fatal("the task's chain shows another task's entries")
	}
	if r := lead.get("/ledger?task=x"); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("a malformed filter: %d", r.Status)
	}
}
