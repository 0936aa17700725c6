//go:build linux && (amd64 || arm64)

package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/attest/attesttest"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/workspace"
)

// attestHarness is gitHarness over a SQLite file in dataDir, the way `countersign
// serve` keeps it, with the signing key made there on first start, so that the
// countersign binary can verify against the same database and key.
func attestHarness(t *testing.T, mut func(*Config)) (h *harness, repo, dataDir string, signer *attest.Signer) {
	t.Helper()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	cfg := storetest.Config(t, "sqlite")
	dataDir = filepath.Dir(cfg.SQLitePath)
	db, err := store.Open(context.Background(), cfg)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	signer, err = attest.LoadOrCreateKey(dataDir)
	must(t, err)
	composer := ledger.Composer{Signer: signer, Ledger: attest.LedgerRef{Kind: "local"}}
	h = newHarnessOn(t, db, composer, func(c *Config) {
		c.Sandbox = sb
		if mut != nil {
			mut(c)
		}
	})
	repo = filepath.Join(h.root, "repo")
	writeFiles(t, repo, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	gitInit(t, repo)
	git(t, repo, "branch", "-M", "main")
	return h, repo, dataDir, signer
}

// postLedger posts every pending entry to the local chain, as the publisher would.
func postLedger(t *testing.T, h *harness) {
	t.Helper()
	_, err := ledger.NewPublisher(h.db, ledger.NewLocal(h.db), ledger.Options{}).Drain(h.ctx)
	must(t, err)
}

// attestVerify runs `countersign attest verify` with args and returns its output and
// whether it verified.
func attestVerify(t *testing.T, bin, dataDir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"attest", "verify", "--data-dir", dataDir}, args...)...)
	cmd.Dir = t.TempDir() // not a repository: the subject is compared only with --repo
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestVerifiedTaskAttestation (issue #35): a verified worktree task's attestation —
// served by the service (what GET /api/v1/tasks/{id}/attestation sends) and attached
// to the landed commit as a git note, pushed with its branch — verifies with the real
// `cosign verify-blob-attestation --key` (--check-claims=false: cosign compares sha256
// subjects only) and with
// `countersign attest verify`; a byte changed in the statement, another commit, and
// the task reopened (task.revoked on the ledger) each fail verification.
func TestVerifiedTaskAttestation(t *testing.T) {
	cosign := attesttest.Cosign(t)
	bin := countersignBinary(t)
	h, repo, dataDir, signer := attestHarness(t, func(c *Config) { c.Landing = LandingConfig{PushRemote: "origin"} })
	bare := filepath.Join(h.root, "remote.git")
	git(t, h.root, "init", "-q", "--bare", bare)
	git(t, repo, "remote", "add", "origin", bare)
	h.worker("fixer", "developer", `sed -i 's/a - b/a + b/' calc.go; echo TASK_COMPLETE`, func(a *models.Agent) {
		a.Workdir, a.Worktree, a.TargetBranch = repo, true, "main"
	})
	fix := h.task("Fix Add", "developer", contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "the fix is there", Command: `grep -q 'a + b' calc.go`}}},
	})
	h.start()
	done := h.settled(fix.ID, 2*time.Minute)
	if done.State != models.TaskVerified || done.Commit == "" {
		t.Fatalf("the fix: %s commit %q; attempts %+v", done.State, done.Commit, h.attempts(fix.ID))
	}
	postLedger(t, h)
	entry, revoked, err := h.svc.Ledger.TaskAttestation(h.ctx, fix.ID)
	must(t, err)
	if revoked {
		t.Fatal("a fresh attestation is reported revoked")
	}
	checkAttestedEntry(t, entry, done)

	// The git note on the landed commit is the attestation, and it reached the remote.
	// (Both are written after the settle that verified the task, in the task's goroutine.)
	for _, gitDir := range []string{filepath.Join(repo, ".git"), bare} {
		h.waitFor("the attestation note in "+gitDir, func() bool {
			out, err := exec.Command("git", "--git-dir="+gitDir, "notes", "--ref="+workspace.NotesRef, "show", done.Commit).Output()
			return err == nil && strings.TrimSpace(string(out)) == strings.TrimSpace(string(entry.Attestation))
		})
	}

	dir := t.TempDir()
	key, envFile, bad := filepath.Join(dir, "key.pub"), filepath.Join(dir, "task.intoto.json"), filepath.Join(dir, "changed.json")
	out, err := exec.Command(bin, "attest", "key", "--data-dir", dataDir).Output()
	must(t, err)
	if string(out) != string(signer.PublicKeyPEM()) {
		t.Fatalf("attest key printed %q", out)
	}
	writeFile(t, key, out)
	writeFile(t, envFile, entry.Attestation)
	writeFile(t, bad, changeStatementByte(t, entry.Attestation))
	base := git(t, repo, "rev-parse", "main")

	cosignChecks(t, cosign, key, envFile, bad)

	// countersign attest verify: by task, by file against the repository, by the note.
	id := strconv.FormatInt(fix.ID, 10)
	for _, args := range [][]string{{"--task", id}, {"--key", key, "--repo", repo, "--commit", done.Commit, envFile}, {"--key", key, "--repo", repo, "--commit", done.Branch}} {
		if out, ok := attestVerify(t, bin, dataDir, args...); !ok || !strings.Contains(out, "the attestation stands") {
			t.Fatalf("attest verify %v: %s", args, out)
		}
	}
	for what, args := range map[string][]string{
		"a changed statement": {"--key", key, bad},
		"another commit":      {"--key", key, "--repo", repo, "--commit", base, envFile},
		"another key":         {"--key", writeOtherKey(t), envFile},
	} {
		if out, ok := attestVerify(t, bin, dataDir, args...); ok {
			t.Fatalf("attest verify passed %s: %s", what, out)
		}
	}

	// Reopened, the task's completion is withdrawn on the ledger: the attestation is revoked.
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, fix.ID, models.ActReopen, models.ActionInput{Reason: "the fix was wrong"})
	must(t, err)
	postLedger(t, h)
	if _, revoked, err := h.svc.Ledger.TaskAttestation(h.ctx, fix.ID); err != nil || !revoked {
		t.Fatalf("after the reopen the service says revoked=%v (%v)", revoked, err)
	}
	for _, args := range [][]string{{"--task", id}, {"--key", key, envFile}} {
		if out, ok := attestVerify(t, bin, dataDir, args...); ok || !strings.Contains(out, "REVOKED") || !strings.Contains(out, "reopened") {
			t.Fatalf("attest verify %v of a reopened task: %s", args, out)
		}
	}
}

// cosignChecks runs the real cosign: it verifies the attestation, and refuses a
// changed statement and another key. Its claim check compares sha256 subjects only, so
// a commit subject is compared by attest verify (or jq; docs/attestations.md).
func cosignChecks(t *testing.T, cosign, key, envFile, bad string) {
	t.Helper()
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, key, envFile, "--check-claims=false"); !ok {
		t.Fatalf("cosign refused the attestation: %s", out)
	}
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, key, bad, "--check-claims=false"); ok {
		t.Fatalf("cosign verified a changed statement: %s", out)
	}
	if out, ok := attesttest.VerifyBlobAttestation(t, cosign, writeOtherKey(t), envFile, "--check-claims=false"); ok {
		t.Fatalf("cosign verified the attestation with another key: %s", out)
	}
}

// checkAttestedEntry checks that the task.complete names the attestation's digest and
// that the attestation says what the task's verification was.
func checkAttestedEntry(t *testing.T, e *models.LedgerEntry, task *models.Task) {
	t.Helper()
	m, err := ledger.ParseMessage(e.Message)
	must(t, err)
	var env struct{ Payload string }
	must(t, json.Unmarshal(e.Attestation, &env))
	statement, err := base64.StdEncoding.DecodeString(env.Payload)
	must(t, err)
	if m.Attestation == "" || m.Attestation != attest.StatementDigest(statement) {
		t.Fatalf("task.complete names %q, the statement's digest is %s", m.Attestation, attest.StatementDigest(statement))
	}
	var st struct {
		Subject   []struct{ Digest map[string]string }
		Predicate attest.Predicate
	}
	must(t, json.Unmarshal(statement, &st))
	p := st.Predicate
	if len(st.Subject) != 1 || st.Subject[0].Digest["gitCommit"] != task.Commit || st.Subject[0].Digest["gitTree"] != m.Tree ||
		p.Task != task.ID || p.Builder != "fixer" || p.Verifier != "runner" || p.Kind != models.KindRunner ||
		p.Contract["sha384"] != m.Contract || len(p.Checks) == 0 || len(p.Criteria) != 1 || p.Judge == nil || p.Ledger.Kind != "local" {
		t.Fatalf("the statement: %s", statement)
	}
}

// checkDeliverableAttested checks that a verified task without git has an attestation
// whose subjects are its deliverable's files, each by path and sha256.
func checkDeliverableAttested(t *testing.T, h *harness, taskID int64, dl *models.Deliverable) {
	t.Helper()
	e, revoked, err := h.svc.Ledger.TaskAttestation(h.ctx, taskID)
	must(t, err)
	var env struct{ Payload string }
	must(t, json.Unmarshal(e.Attestation, &env))
	statement, err := base64.StdEncoding.DecodeString(env.Payload)
	must(t, err)
	var st struct {
		Subject []struct {
			Name   string
			Digest map[string]string
		}
	}
	must(t, json.Unmarshal(statement, &st))
	if revoked || len(st.Subject) != len(dl.Files) {
		t.Fatalf("the deliverable's attestation (revoked %v): %s", revoked, statement)
	}
	for i, f := range dl.Files {
		if s := st.Subject[i]; s.Name != f.Path || s.Digest["sha256"] != f.SHA256 || len(s.Digest) != 1 {
			t.Fatalf("subject %d is %+v, the deliverable's file %+v", i, s, f)
		}
	}
}

// changeStatementByte changes one byte of the envelope's statement, keeping its
// signature.
func changeStatementByte(t *testing.T, envelope []byte) []byte {
	t.Helper()
	var e map[string]any
	must(t, json.Unmarshal(envelope, &e))
	body, err := base64.StdEncoding.DecodeString(e["payload"].(string))
	must(t, err)
	i := strings.Index(string(body), `"fixer"`)
	body[i+1] = 'F'
	e["payload"] = base64.StdEncoding.EncodeToString(body)
	out, err := json.Marshal(e)
	must(t, err)
	return out
}

// writeOtherKey writes the public key of a key pair nobody signed with.
func writeOtherKey(t *testing.T) string {
	t.Helper()
	s, err := attest.LoadOrCreateKey(t.TempDir())
	must(t, err)
	p := filepath.Join(t.TempDir(), "other.pub")
	writeFile(t, p, s.PublicKeyPEM())
	return p
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	must(t, os.WriteFile(path, b, 0o600))
}
