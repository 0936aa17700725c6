package pages_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestReassignListsRoleHolders: the Reassign select of a task page and of its inbox
// item lists only the enabled agents holding the task's role (developer here): not
// the lead, the exec, the tester, a worker of another role or a disabled developer.
func TestReassignListsRoleHolders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	e.agent("qa-bot", models.KindWorker, "qa")
	off := e.agent("old-bot", models.KindWorker, "developer")
	off.Disabled = true
	if err := e.db.UpdateAgent(e.ctx(), off); err != nil {
		t.Fatal(err)
	}
	bt := e.blockedTask("reassign options", nil)
	exec := e.browser().login("exec")
	want := []string{"", "bot", "dev"}
	page := exec.get("/tasks/" + itoa64(bt.ID))
	if page.Status != http.StatusOK {
		t.Fatalf("task page: %d", page.Status)
	}
	if got := selectOptions(t, page.Body, "act-reassign-agent"); !slices.Equal(got, want) {
		t.Fatalf("the task page's Reassign lists %v, want %v", got, want)
	}
	inbox := exec.get("/inbox")
	if got := selectOptions(t, inbox.Body, "inbox-reassign-agent"); !slices.Equal(got, want) {
		t.Fatalf("the inbox's Reassign lists %v, want %v", got, want)
	}
}

// selectOptions returns the option values of the select with data-testid testid,
// sorted.
func selectOptions(t *testing.T, html, testid string) []string {
	t.Helper()
	i := strings.Index(html, `data-testid="`+testid+`"`)
	if i < 0 {
		t.Fatalf("no select %s", testid)
	}
	end := strings.Index(html[i:], "</select>")
	var out []string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(html[i:i+end], -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}
