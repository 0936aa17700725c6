package runner

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/drift"
)

// takeFingerprint records what the passed attempt's verification covers, for a later
// recheck to compare (models.Fingerprint): in a git worktree, the blob ids of the files
// the verified commit changed against the task's base; otherwise the SHA-256 of the
// files the kept deliverable holds (what the task added or changed); and in both the
// output file. Like the deliverable it is evidence, not a check: whatever goes wrong
// is logged and the task is verified without one.
func (p *attemptRunner) takeFingerprint(ctx context.Context, tr *taskRun, ar *attemptRun) {
	if ar.ws == nil || ar.outcome != models.OutcomePassed {
		return
	}
	fp, err := p.fingerprintOf(ctx, tr, ar)
	if err != nil {
		p.log.Warn("fingerprinting the verified work failed; no recheck will see it change", "task_id", tr.task.ID, "attempt", ar.num, "err", err)
		return
	}
	ar.fingerprint = fp
}

func (p *attemptRunner) fingerprintOf(ctx context.Context, tr *taskRun, ar *attemptRun) (*models.Fingerprint, error) {
	fp := &models.Fingerprint{Dir: ar.ws.Dir, At: time.Now().UTC()}
	base := tr.task.Base
	if base == "" {
		base = ar.ws.BaseCommit()
	}
	switch {
	case ar.commit != "" && base != "":
		changed, err := p.cfg.Workspaces.Changed(ctx, ar.ws.Repo(), base, ar.commit)
		if err != nil {
			return nil, err
		}
		fp.Git = true
		for _, c := range changed {
			if c.Blob != "" && !c.Regular {
				fp.Truncated = true // a link or a submodule: not hashed here
				continue
			}
			fp.Files = append(fp.Files, models.FingerprintFile{Path: c.Path, Hash: c.Blob})
		}
	case ar.deliv != nil && ar.deliv.kept != nil:
		for _, f := range ar.deliv.kept.Files {
			fp.Files = append(fp.Files, models.FingerprintFile{Path: f.Path, Hash: f.SHA256})
		}
		fp.Truncated = ar.deliv.kept.Truncated
	}
	if err := p.fingerprintOutput(fp, ar); err != nil {
		return nil, err
	}
	if len(fp.Files) == 0 {
		return nil, nil // nothing was produced that could change
	}
	return fp, nil
}

// fingerprintOutput adds the output file to fp when it is in the workspace and not
// among the changed files already (a task that rewrote its output with the same
// content changed nothing, yet its output is still what was verified).
func (p *attemptRunner) fingerprintOutput(fp *models.Fingerprint, ar *attemptRun) error {
	if ar.outAbs == "" {
		return nil
	}
	rel, err := filepath.Rel(ar.ws.Dir, ar.outAbs)
	if err != nil || !filepath.IsLocal(rel) {
		return nil // an output outside the workspace is not the workspace's to recheck
	}
	rel = filepath.ToSlash(rel)
	fp.Output = rel
	if slices.ContainsFunc(fp.Files, func(f models.FingerprintFile) bool { return f.Path == rel }) {
		return nil
	}
	blobLen := 0
	if fp.Git {
		blobLen = len(ar.commit)
	}
	sum, exists, err := drift.Hash{Git: fp.Git, BlobLen: blobLen}.File(fp.Dir, rel)
	if err != nil || !exists {
		return err
	}
	fp.Files = append(fp.Files, models.FingerprintFile{Path: rel, Hash: sum})
	return nil
}
