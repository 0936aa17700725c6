package handlers

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/drift"
	"github.com/countersign/countersign/runner/workspace"
)

// OutputAPI serves a task's output file (its contract's completion path) as the
// verified attempt left it, to whoever may read the task.
type OutputAPI struct {
	store models.Store
	files models.DeliverableStore
}

// NewOutputAPI returns the output download over svc; files are the kept
// deliverables (nil: the workspace's copy only).
func NewOutputAPI(store models.Store, files models.DeliverableStore) *OutputAPI {
	return &OutputAPI{store: store, files: files}
}

// Register adds GET /tasks/:id/output to g (the /api/v1 group).
func (h *OutputAPI) Register(g *echo.Group) {
	g.GET("/tasks/:id/output", h.Download)
}

// TaskOutput is a task's output file, open for reading: Name is its path in the
// task's workspace (slash-separated), the only name a client ever sees.
type TaskOutput struct {
	Name string
	Size int64
	// Changed says the file is the workspace's and no longer what was verified (its
	// hash differs from the fingerprint's): the kept copy is never changed.
	Changed bool
	io.ReadCloser
}

// OpenOutput opens the output of task t, whose attempts are attempts: the kept copy
// when the newest verified attempt kept one (what was verified), else the file in the
// task's workspace, opened beneath the workspace with no symbolic link followed. The
// path is never the request's: it is the one the runner fingerprinted when the
// attempt passed. A task with no such output, or one this server cannot read (pruned,
// or on another machine), is ENOTFOUND, whose message never names a server path.
func OpenOutput(ctx context.Context, t *models.Task, attempts []models.Attempt, files models.DeliverableStore) (*TaskOutput, error) {
	fp := t.Fingerprint
	if fp == nil || fp.Output == "" || !filepath.IsLocal(filepath.FromSlash(fp.Output)) {
		return nil, models.Errorf(models.ENOTFOUND, "task %d has no verified output file", t.ID)
	}
	unavailable := models.Errorf(models.ENOTFOUND, "the output of task %d (%s) cannot be read here", t.ID, fp.Output)
	if a, err := models.LatestDeliverable(t.ID, attempts); err == nil && files != nil {
		if f, ok := a.Deliverable.Find(fp.Output); ok {
			rc, err := files.Open(ctx, t.ID, a.Number, f.Path)
			if err == nil {
				return &TaskOutput{Name: f.Path, Size: f.Size, ReadCloser: rc}, nil
			}
		}
	}
	if fp.Dir == "" {
		return nil, unavailable
	}
	f, err := workspace.OpenRegularBeneath(fp.Dir, filepath.FromSlash(fp.Output))
	if err != nil {
		return nil, unavailable
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, unavailable
	}
	return &TaskOutput{Name: fp.Output, Size: fi.Size(), Changed: changedSinceCached(fp, fi), ReadCloser: f}, nil
}

// changedSince says whether fp's output file in its workspace differs from what the
// fingerprint recorded; a file it recorded no hash for is not known to have changed.
func changedSince(fp *models.Fingerprint) bool {
	hash := outputHash(fp)
	if hash == "" {
		return false
	}
	sum, exists, err := drift.HashOf(fp.Git, hash).File(fp.Dir, fp.Output)
	return err != nil || !exists || sum != hash
}

// outputHash is the hash fp recorded for its output file; "" when it recorded none.
func outputHash(fp *models.Fingerprint) string {
	for _, f := range fp.Files {
		if f.Path == fp.Output && f.Hash != "" {
			return f.Hash
		}
	}
	return ""
}

// Download answers GET /tasks/{id}/output: the output file as an attachment that no
// browser renders, named by its base name; 404 when the task has none to serve.
func (h *OutputAPI) Download(c echo.Context) error {
	t, attempts, err := readableTask(c, h.store)
	if err != nil {
		return err
	}
	out, err := OpenOutput(c.Request().Context(), t, attempts, h.files)
	if err != nil {
		return err
	}
	defer out.Close()
	attachment(c, out.Name[strings.LastIndexByte(out.Name, '/')+1:])
	c.Response().Header().Set(echo.HeaderContentLength, strconv.FormatInt(out.Size, 10))
	c.Response().WriteHeader(http.StatusOK)
	_, err = io.CopyN(c.Response(), out, out.Size)
	return err
}
