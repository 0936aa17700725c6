package pages_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/ledger"
)

// TestTaskPageLinksTheAttestation: a verified task whose standing completion carries a
// signed attestation shows a download link on its verification card, served behind
// the session byte for byte; reopened (revoked), the link goes.
func TestTaskPageLinksTheAttestation(t *testing.T) {
	e := newEnvWith(t, "sqlite", envOptions{})
	e.team()
	ctx := e.ctx()
	tk := e.humanTask("Attested work", nil, models.TaskVerified)
	signer, err := attest.LoadOrCreateKey(t.TempDir())
	must(t, err)
	tk.Commit = strings.Repeat("d", 40)
	complete, err := ledger.Composer{Signer: signer}.TaskComplete(models.Completion{Task: tk, Kind: models.KindRunner, At: time.Now()})
	must(t, err)
	must(t, e.db.AppendLedgerEntry(ctx, complete))

	b := e.browser().login("exec")
	page := "/tasks/" + itoa64(tk.ID)
	if pg := b.get(page); !strings.Contains(pg.Body, `data-testid="task-attestation-download"`) || !strings.Contains(pg.Body, `href="`+page+`/attestation"`) {
		t.Fatal("the task page has no attestation link")
	}
	dl := b.get(page + "/attestation")
	if dl.Status != http.StatusOK || dl.Body != string(complete.Attestation) || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the download: %d %v", dl.Status, dl.Header)
	}
	if r := e.browser().get(page + "/attestation"); r.Status == http.StatusOK {
		t.Fatal("the attestation was served without a session")
	}
	revoked, err := ledger.Composer{}.TaskRevoked(tk, complete, nil, models.RevokedReopened, "wrong", time.Now())
	must(t, err)
	must(t, e.db.AppendLedgerEntry(ctx, revoked))
	if pg := b.get(page); strings.Contains(pg.Body, `data-testid="task-attestation-download"`) {
		t.Fatal("a revoked attestation is still offered as the task's")
	}
}
