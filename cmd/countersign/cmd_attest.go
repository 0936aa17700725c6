package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/attest"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/workspace"
)

// attestingService builds the governance service of a process that verifies tasks
// (serve, runner): its task.complete entries carry attestations signed with the key in
// the data dir, made there on first start.
func attestingService(c *config, db *store.DB, info ledger.Info) (*models.Service, *attest.Signer, error) {
	signer, err := attest.LoadOrCreateKey(c.DataDir)
	if err != nil {
		return nil, nil, err
	}
	ref := attest.LedgerRef{Kind: info.Kind, Network: info.Network, Topic: info.TopicID}
	return models.NewService(db, ledger.Composer{Signer: signer, Ledger: ref}), signer, nil
}

// runAttestKey is `countersign attest key`: it prints the public key attestations
// verify with (making the key pair first, as serve would, when there is none).
func runAttestKey(_ context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("attest key", "attest key [--data-dir DIR]", out)
	fs.StringVar(&c.DataDir, "data-dir", envOr("data", "COUNTERSIGN_DATA_DIR"), "directory holding "+attest.KeyFile+" (env COUNTERSIGN_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := attest.LoadOrCreateKey(c.DataDir)
	if err != nil {
		return err
	}
	_, err = out.Write(s.PublicKeyPEM())
	return err
}

// attestVerifyFlags are `attest verify`'s own settings.
type attestVerifyFlags struct {
	task     int64
	key      string
	repo     string
	commit   string
	mirror   string
	noLedger bool
}

// runAttestVerify is `countersign attest verify FILE | --task ID`: it checks the
// signature against the key, the subject against the repository's commit, and that a
// posted task.complete names the statement's digest and no task.revoked withdrew it.
// Any failure is an error (exit status 2); what was not checked is said.
func runAttestVerify(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var f attestVerifyFlags
	fs := newFlags("attest verify", "attest verify [flags] FILE | --task ID | --repo DIR --commit REV", out)
	storeFlags(fs, &c)
	fs.Int64Var(&f.task, "task", 0, "verify this task's newest attestation, read from the database")
	fs.StringVar(&f.key, "key", "", "PEM public key to verify with (default: the data dir's signing key)")
	fs.StringVar(&f.repo, "repo", "", "git repository the attested commit must be in (default: the current directory, when it is one)")
	fs.StringVar(&f.commit, "commit", "", "the commit (any revision) the attestation must be about; without FILE or --task its git note is verified")
	fs.StringVar(&f.mirror, "mirror", envOr("", ledger.EnvMirrorURL), "with an HCS ledger: mirror node REST URL to read the entry from the topic itself and compare it byte for byte (env HEDERA_MIRROR_URL)")
	fs.BoolVar(&f.noLedger, "no-ledger", false, "do not look the digest up on the ledger (no database at hand)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.repo == "" && isGitDir(ctx, ".") {
		f.repo = "."
	}
	var db *store.DB
	if f.task != 0 || !f.noLedger {
		var err error
		if db, err = openStore(ctx, &c); err != nil {
			return err
		}
		defer db.Close()
	}
	envelope, err := attestationToVerify(ctx, db, fs.Args(), f)
	if err != nil {
		return err
	}
	pub, err := verifyKey(c.DataDir, f.key)
	if err != nil {
		return err
	}
	v, err := attest.Verify(ctx, envelope, pub)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "signature: good (%s)\nstatement: sha256:%s\ntask %d, kind %s, verified by %s at %s\n",
		attest.PredicateType, v.Digest, v.Predicate.Task, v.Predicate.Kind, v.Predicate.Verifier, v.Predicate.VerifiedAt.Format("2006-01-02T15:04:05Z"))
	if err := verifySubject(ctx, out, v, f); err != nil {
		return err
	}
	if f.noLedger {
		fmt.Fprintln(out, "ledger: not checked (--no-ledger)")
		return nil
	}
	return verifyOnLedger(ctx, out, db, v, f.mirror)
}

// attestationToVerify reads the envelope from FILE, the task's newest attestation, or
// the note of --commit in --repo.
func attestationToVerify(ctx context.Context, db *store.DB, args []string, f attestVerifyFlags) ([]byte, error) {
	switch {
	case len(args) > 1 || (len(args) == 1 && f.task != 0):
		return nil, errors.New("attest verify: give one FILE or --task ID, not both")
	case len(args) == 1:
		return os.ReadFile(args[0])
	case f.task != 0:
		e, _, err := models.NewService(db, ledger.Composer{}).Ledger.TaskAttestation(ctx, f.task)
		if err != nil {
			return nil, err
		}
		return e.Attestation, nil
	case f.repo != "" && f.commit != "":
		b, err := gitOut(ctx, f.repo, "notes", "--ref="+workspace.NotesRef, "show", f.commit)
		if err != nil {
			return nil, fmt.Errorf("attest verify: no attestation note on %s: %w", f.commit, err)
		}
		return b, nil
	}
	return nil, errors.New("attest verify: give FILE, --task ID, or --repo DIR --commit REV")
}

// verifyKey reads the PEM public key: --key's file, else the data dir's signing key's
// public half (never made here: verifying with a key made just now proves nothing).
func verifyKey(dataDir, keyFile string) ([]byte, error) {
	if keyFile != "" {
		return os.ReadFile(keyFile)
	}
	if _, err := os.Stat(dataDir + "/" + attest.KeyFile); err != nil {
		return nil, fmt.Errorf("attest verify: no --key and no signing key in %s: %w", dataDir, err)
	}
	s, err := attest.LoadOrCreateKey(dataDir)
	if err != nil {
		return nil, err
	}
	return s.PublicKeyPEM(), nil
}

// verifySubject checks a commit subject against the repository: the commit is there,
// its tree is the attested tree, and it is --commit when given. A deliverable's files
// are named with their sha256 for the caller to compare.
func verifySubject(ctx context.Context, out io.Writer, v *attest.Verified, f attestVerifyFlags) error {
	commit := v.Commit()
	if commit == "" {
		for _, s := range v.Subjects {
			fmt.Fprintf(out, "subject: %s sha256:%s (not compared: check the file's sha256)\n", s.Name, s.Digest["sha256"])
		}
		return nil
	}
	if f.repo == "" {
		fmt.Fprintf(out, "subject: commit %s (not compared: no --repo)\n", commit)
		return nil
	}
	if f.commit != "" {
		want, err := gitOut(ctx, f.repo, "rev-parse", "--verify", "--end-of-options", f.commit+"^{commit}")
		if err != nil {
			return fmt.Errorf("attest verify: %s is not a commit in %s", f.commit, f.repo)
		}
		if got := strings.TrimSpace(string(want)); got != commit {
			return fmt.Errorf("attest verify: subject mismatch: the attestation is about commit %s, not %s (%s)", commit, got, f.commit)
		}
	}
	tree, err := gitOut(ctx, f.repo, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return fmt.Errorf("attest verify: subject mismatch: commit %s is not in %s", commit, f.repo)
	}
	if want := v.Tree(); want != "" && strings.TrimSpace(string(tree)) != want {
		return fmt.Errorf("attest verify: subject mismatch: commit %s has tree %s, the attestation says %s", commit, strings.TrimSpace(string(tree)), want)
	}
	fmt.Fprintf(out, "subject: commit %s found in %s with the attested tree\n", commit, f.repo)
	return nil
}

// verifyOnLedger checks the local chain (for a local ledger) and finds the posted
// task.complete naming v's digest; a revocation of it is an error.
func verifyOnLedger(ctx context.Context, out io.Writer, db *store.DB, v *attest.Verified, mirror string) error {
	entries, err := ledger.ReadAll(ctx, db)
	if err != nil {
		return err
	}
	if v.Predicate.Ledger.Kind != "hcs" {
		if err := ledger.VerifyChain(entries); err != nil {
			return fmt.Errorf("attest verify: ledger chain broken: %w", err)
		}
	}
	r, err := ledger.FindAttestation(entries, v.Predicate.Task, v.Digest)
	if err != nil {
		return fmt.Errorf("attest verify: %w", err)
	}
	where := v.Predicate.Ledger.Kind
	if t := v.Predicate.Ledger.Topic; t != "" {
		where += " topic " + t
	}
	fmt.Fprintf(out, "ledger: %s sequence %d (entry %d) names this digest", where, r.Complete.Sequence, r.Complete.ID)
	if r.Complete.ConsensusAt != nil {
		fmt.Fprintf(out, ", consensus %s", r.Complete.ConsensusAt.UTC().Format("2006-01-02T15:04:05.000000Z"))
	}
	fmt.Fprintln(out)
	if err := verifyOnTopic(ctx, out, v, r, mirror); err != nil {
		return err
	}
	if r.Revoked != nil {
		return fmt.Errorf("attest verify: REVOKED: task %d's completion was withdrawn (%s) by ledger sequence %d (entry %d)",
			v.Predicate.Task, r.Why, r.Revoked.Sequence, r.Revoked.ID)
	}
	fmt.Fprintln(out, "revocation: none; the attestation stands")
	return nil
}

// verifyOnTopic, for an HCS ledger with a mirror URL, reads the entry (and its
// revocation, if any) from the topic itself and compares them byte for byte.
func verifyOnTopic(ctx context.Context, out io.Writer, v *attest.Verified, r ledger.AttestationRecord, mirror string) error {
	topic := v.Predicate.Ledger.Topic
	if v.Predicate.Ledger.Kind != "hcs" || topic == "" {
		return nil
	}
	if mirror == "" {
		fmt.Fprintln(out, "topic: not read (no --mirror); the entry is the database's copy of what was posted")
		return nil
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, e := range []*models.LedgerEntry{r.Complete, r.Revoked} {
		if e == nil {
			continue
		}
		at, err := ledger.CheckOnTopic(ctx, client, strings.TrimRight(mirror, "/"), topic, e.Message, e.Sequence)
		if err != nil {
			return fmt.Errorf("attest verify: %w", err)
		}
		fmt.Fprintf(out, "topic: %s message %d (%s) is the entry, consensus %s\n", topic, e.Sequence, e.Type, at.Format(time.RFC3339Nano))
	}
	return nil
}

// isGitDir reports whether dir is inside a git work tree.
func isGitDir(ctx context.Context, dir string) bool {
	_, err := gitOut(ctx, dir, "rev-parse", "--git-dir")
	return err == nil
}

// gitOut runs a read-only git command in repo with the runner's own git safety
// (workspace.ReadCommand).
func gitOut(ctx context.Context, repo string, args ...string) ([]byte, error) {
	return workspace.ReadCommand(ctx, repo, args...).Output()
}
