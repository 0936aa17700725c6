package drift

import (
	"context"
	"errors"

	"github.com/countersign/countersign/models"
)

// ErrWorkspaceGone says the fingerprinted workspace no longer exists (pruned, or
// merged and removed): nothing can be compared, which is not drift.
var ErrWorkspaceGone = errors.New("drift: the task's workspace is gone")

// Compare hashes every file fp names in its workspace and returns the paths whose
// content differs from what was verified (a file the task deleted that is back counts
// too), sorted as fp lists them; ErrWorkspaceGone when the workspace is gone.
func Compare(ctx context.Context, fp *models.Fingerprint) ([]string, error) {
	if !dirExists(fp.Dir) {
		return nil, ErrWorkspaceGone
	}
	var changed []string
	for _, f := range fp.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, exists, err := HashOf(fp.Git, f.Hash).File(fp.Dir, f.Path)
		if err != nil {
			return nil, err
		}
		if exists != (f.Hash != "") || sum != f.Hash {
			changed = append(changed, f.Path)
		}
	}
	return changed, nil
}
