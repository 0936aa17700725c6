package attest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/attest/attesttest"
)

const commitA = "0123456789abcdef0123456789abcdef01234567"

func predicate() attest.Predicate {
	return attest.Predicate{Task: 7, Contract: attest.Digest{"sha384": strings.Repeat("a", 96)}, Kind: models.KindRunner,
		Builder: "dev", Verifier: "runner", Checks: []models.CheckResult{{Stage: models.StageVerify, Verdict: models.VerdictPass}},
		Ledger: attest.LedgerRef{Kind: "local", Entry: models.LedgerTaskComplete}, VerifiedAt: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
}

// sign makes a key in a temp dir and signs a statement about subjects.
func sign(t *testing.T, subjects ...attest.Subject) (dir string, s *attest.Signer, env []byte) {
	t.Helper()
	dir = t.TempDir()
	s, err := attest.LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := attest.Statement(subjects, predicate())
	if err != nil {
		t.Fatal(err)
	}
	env, err = s.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return dir, s, env
}

func TestKeyIsMadeOnceAndPrivate(t *testing.T) {
	dir, s, _ := sign(t, attest.CommitSubject("main", commitA, ""))
	fi, err := os.Stat(filepath.Join(dir, attest.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	again, err := attest.LoadOrCreateKey(dir)
	if err != nil || string(again.PublicKeyPEM()) != string(s.PublicKeyPEM()) {
		t.Fatalf("a second start made another key (%v)", err)
	}
	if err := os.Chmod(filepath.Join(dir, attest.KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := attest.LoadOrCreateKey(dir); err == nil {
		t.Fatal("a key file others may read was accepted")
	}
}

// tamper changes one byte of the signed statement and keeps the signature.
func tamper(t *testing.T, env []byte) []byte {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	body, err := base64.StdEncoding.DecodeString(e["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(body), `"dev"`)
	body[i+1] = 'D' // the builder's name
	e["payload"] = base64.StdEncoding.EncodeToString(body)
	out, _ := json.Marshal(e)
	return out
}

func TestSignVerifyAndTamper(t *testing.T) {
	_, s, env := sign(t, attest.CommitSubject("main", commitA, strings.Repeat("b", 40)))
	v, err := attest.Verify(context.Background(), env, s.PublicKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	if v.Commit() != commitA || v.Tree() != strings.Repeat("b", 40) || v.Predicate.Builder != "dev" || v.Predicate.Task != 7 {
		t.Fatalf("verified: %+v", v)
	}
	sum := sha256.Sum256(v.Statement)
	if v.Digest != hex.EncodeToString(sum[:]) {
		t.Fatal("digest is not the statement's sha256")
	}
	if _, err := attest.Verify(context.Background(), tamper(t, env), s.PublicKeyPEM()); err == nil {
		t.Fatal("a changed statement verified")
	}
	_, other, _ := sign(t, attest.CommitSubject("main", commitA, ""))
	if _, err := attest.Verify(context.Background(), env, other.PublicKeyPEM()); err == nil {
		t.Fatal("verified with another key")
	}
}

// TestCosignVerifiesDeliverableAttestation: the real cosign verifies a deliverable's
// attestation against the file itself (its sha256 is a subject), and refuses another
// file and a changed statement.
func TestCosignVerifiesDeliverableAttestation(t *testing.T) {
	cosign := attesttest.Cosign(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.md")
	if err := os.WriteFile(file, []byte("# the report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("# the report\n"))
	_, s, env := sign(t, attest.DeliverableSubjects(&models.Deliverable{Files: []models.DeliverableFile{{Path: "report.md", Size: 13, SHA256: hex.EncodeToString(sum[:])}}})...)
	key, envFile, bad := filepath.Join(dir, "key.pub"), filepath.Join(dir, "env.json"), filepath.Join(dir, "bad.json")
	for p, b := range map[string][]byte{key: s.PublicKeyPEM(), envFile: env, bad: tamper(t, env)} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, key, envFile, file); !ok {
		t.Fatalf("cosign refused a good attestation: %s", out)
	}
	other := filepath.Join(dir, "other.md")
	if err := os.WriteFile(other, []byte("# another report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, key, envFile, other); ok {
		t.Fatalf("cosign verified the attestation against another file: %s", out)
	}
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, key, bad, file); ok {
		t.Fatalf("cosign verified a changed statement: %s", out)
	}
}
