package handlers_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/ledger"
)

// getAttestation sends GET path with token and returns the response and its body.
func getAttestation(t *testing.T, url, token string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestAttestationEndpoints: GET /tasks/{id}/attestation serves the envelope stored
// with the task's task.complete byte for byte, with the digest its message names, and
// says revoked once a task.revoked withdrew it; /attestations/key serves the key the
// envelope verifies with; a task without one is 404.
func TestAttestationEndpoints(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db, svc := handlertest.Open(t, dialect)
		signer, err := attest.LoadOrCreateKey(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, srv := handlertest.Serve(t, handlers.Deps{Service: svc, AttestationKey: signer.PublicKeyPEM()})
		lead := handlertest.CreateAgent(t, svc, "lee", models.KindHuman, "", models.RoleLead)
		token := handlertest.CreateToken(t, svc, "lee", "test")
		tk, err := svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "attested"})
		if err != nil {
			t.Fatal(err)
		}
		bare, err := svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "never verified"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Commit = strings.Repeat("c", 40)
		composer := ledger.Composer{Signer: signer}
		complete, err := composer.TaskComplete(models.Completion{Task: tk, Kind: models.KindRunner, At: time.Now()})
		if err != nil || len(complete.Attestation) == 0 {
			t.Fatalf("composing: %v (attestation %d bytes)", err, len(complete.Attestation))
		}
		if err := db.AppendLedgerEntry(ctx, complete); err != nil {
			t.Fatal(err)
		}
		url := srv.URL + "/api/v1/tasks/" + itoa(tk.ID) + "/attestation"
		res, body := getAttestation(t, url, token)
		v, err := attest.Verify(ctx, body, signer.PublicKeyPEM())
		if res.StatusCode != http.StatusOK || string(body) != string(complete.Attestation) || err != nil {
			t.Fatalf("GET attestation: %d (%v)\n%s", res.StatusCode, err, body)
		}
		if res.Header.Get("X-Attestation-Digest") != "sha256:"+v.Digest || res.Header.Get("X-Attestation-Revoked") != "false" ||
			res.Header.Get("X-Ledger-Entry") != itoa(complete.ID) || !strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("headers: %v", res.Header)
		}
		if res, key := getAttestation(t, srv.URL+"/api/v1/attestations/key", token); res.StatusCode != http.StatusOK || string(key) != string(signer.PublicKeyPEM()) {
			t.Fatalf("GET key: %d %s", res.StatusCode, key)
		}
		if res, _ := getAttestation(t, srv.URL+"/api/v1/tasks/"+itoa(bare.ID)+"/attestation", token); res.StatusCode != http.StatusNotFound {
			t.Fatalf("a task without an attestation: %d", res.StatusCode)
		}
		if res, _ := getAttestation(t, url, "not-a-token"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("without a token: %d", res.StatusCode)
		}

		revoked, err := composer.TaskRevoked(tk, complete, lead, models.RevokedReopened, "wrong", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := db.AppendLedgerEntry(ctx, revoked); err != nil {
			t.Fatal(err)
		}
		if res, again := getAttestation(t, url, token); res.Header.Get("X-Attestation-Revoked") != "true" || string(again) != string(body) {
			t.Fatalf("after task.revoked: revoked=%q", res.Header.Get("X-Attestation-Revoked"))
		}
	})
}
