package models

import (
	"context"
	"io"
)

// Deliverable is what a verified attempt of a task without a git workspace left: the
// regular files it added or changed in its workspace, kept by the runner as they were
// when the checks passed. Later changes to the workspace do not change it.
type Deliverable struct {
	// Files are the files kept, sorted by path.
	Files []DeliverableFile `json:"files"`
	// Truncated says the deliverable is not every changed file: a bound (file count,
	// total size, entries walked) left some out, or a file could not be kept.
	Truncated bool `json:"truncated,omitempty"`
	// Omitted is how many changed files were seen and not kept.
	Omitted int `json:"omitted,omitempty"`
}

// DeliverableFile is one kept file: its path relative to the workspace
// (slash-separated, never absolute, never climbing with ".."), the size and the
// SHA-256 (hex) of the bytes that were kept.
type DeliverableFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Find returns the file of the deliverable whose path is exactly path, and whether
// there is one. It is the only way a path a client names reaches the kept files.
func (d *Deliverable) Find(path string) (DeliverableFile, bool) {
	if d == nil {
		return DeliverableFile{}, false
	}
	for _, f := range d.Files {
		if f.Path == path {
			return f, true
		}
	}
	return DeliverableFile{}, false
}

// DeliverableStore reads the kept files of a task's deliverables. Open returns the
// kept copy of path (a DeliverableFile.Path of the attempt's manifest) of attempt
// number attempt of task taskID; a file that is not there is *Error ENOTFOUND. The
// errors never name where the files are kept.
type DeliverableStore interface {
	Open(ctx context.Context, taskID int64, attempt int, path string) (io.ReadCloser, error)
}

// LatestDeliverable returns the newest passed attempt of attempts (in the order they
// were made) when it kept a deliverable; ENOTFOUND when there is no passed attempt or
// the newest one kept none, so that an older deliverable never stands in for a newer
// verification.
func LatestDeliverable(taskID int64, attempts []Attempt) (*Attempt, error) {
	for i := len(attempts) - 1; i >= 0; i-- {
		a := &attempts[i]
		if a.Outcome != OutcomePassed {
			continue
		}
		if a.Deliverable == nil {
			break
		}
		return a, nil
	}
	return nil, Errorf(ENOTFOUND, "task %d has no deliverable", taskID)
}
