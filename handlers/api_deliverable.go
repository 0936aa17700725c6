package handlers

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// DeliverableAPI serves the deliverables of tasks without a git workspace: the
// manifest of the newest verified attempt and the files it kept, to whoever may read
// the task.
type DeliverableAPI struct {
	store models.Store
	files models.DeliverableStore
}

// NewDeliverableAPI returns the deliverable handlers; a nil files (a server that
// cannot read the data dir) serves manifests and answers every download with 404.
func NewDeliverableAPI(store models.Store, files models.DeliverableStore) *DeliverableAPI {
	return &DeliverableAPI{store: store, files: files}
}

// Register adds the deliverable routes to g (the /api/v1 group):
//
//	GET /tasks/:id/deliverable            the manifest (DeliverableManifest)
//	GET /tasks/:id/deliverable/files/*    one kept file, as an attachment
//	GET /tasks/:id/deliverable.tar.gz     every kept file
func (h *DeliverableAPI) Register(g *echo.Group) {
	g.GET("/tasks/:id/deliverable", h.Manifest)
	g.GET("/tasks/:id/deliverable/files/*", h.File)
	g.GET("/tasks/:id/deliverable.tar.gz", h.Archive)
}

// DeliverableManifest is a task's deliverable as the API returns it: the verified
// attempt that kept it and its files.
type DeliverableManifest struct {
	TaskID  int64 `json:"task_id"`
	Attempt int   `json:"attempt"`
	models.Deliverable
}

// Manifest answers GET /tasks/{id}/deliverable: the newest verified attempt's
// deliverable; 404 ENOTFOUND when it kept none.
func (h *DeliverableAPI) Manifest(c echo.Context) error {
	a, err := h.latest(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DeliverableManifest{TaskID: a.TaskID, Attempt: a.Number, Deliverable: *a.Deliverable})
}

// File answers GET /tasks/{id}/deliverable/files/{path}: the kept bytes of a file the
// manifest lists, as an attachment that no browser renders. Any other path is 404.
func (h *DeliverableAPI) File(c echo.Context) error {
	a, err := h.latest(c)
	if err != nil {
		return err
	}
	name, err := wildcardPath(c)
	if err != nil {
		return err
	}
	// Only a path the manifest lists goes any further: what reaches the store is the
	// manifest's own path, never the request's.
	f, ok := a.Deliverable.Find(name)
	if !ok {
		return models.Errorf(models.ENOTFOUND, "the deliverable of task %d has no file %q", a.TaskID, name)
	}
	rc, err := h.open(c, a, f.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	attachment(c, f.Path[strings.LastIndexByte(f.Path, '/')+1:])
	c.Response().Header().Set(echo.HeaderContentLength, strconv.FormatInt(f.Size, 10))
	c.Response().WriteHeader(http.StatusOK)
	// Exactly the manifest's size: a kept copy that is shorter breaks the download
	// rather than passing for the file.
	_, err = io.CopyN(c.Response(), rc, f.Size)
	return err
}

// Archive answers GET /tasks/{id}/deliverable.tar.gz: every file of the manifest in
// a gzipped tar, under task-<id>/.
func (h *DeliverableAPI) Archive(c echo.Context) error {
	a, err := h.latest(c)
	if err != nil {
		return err
	}
	if h.files == nil {
		return noFiles(a.TaskID)
	}
	dir := "task-" + strconv.FormatInt(a.TaskID, 10) + "/"
	attachment(c, "task-"+strconv.FormatInt(a.TaskID, 10)+"-deliverable.tar.gz")
	c.Response().Header().Set(echo.HeaderContentType, "application/gzip")
	c.Response().WriteHeader(http.StatusOK)
	gz := gzip.NewWriter(c.Response())
	tw := tar.NewWriter(gz)
	mod := a.StartedAt
	if a.FinishedAt != nil {
		mod = *a.FinishedAt
	}
	for _, f := range a.Deliverable.Files {
		if err := h.addFile(c, tw, a, f, dir, mod); err != nil {
			return err // the response is committed: the client sees a broken archive
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func (h *DeliverableAPI) addFile(c echo.Context, tw *tar.Writer, a *models.Attempt, f models.DeliverableFile, dir string, mod time.Time) error {
	rc, err := h.open(c, a, f.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: dir + f.Path, Size: f.Size, Mode: 0o644, ModTime: mod.UTC()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.CopyN(tw, rc, f.Size)
	return err
}

// latest reads the task of the request, refuses a reader who may not read it (an
// attempt token of another task), and returns its newest verified attempt with a
// deliverable.
func (h *DeliverableAPI) latest(c echo.Context) (*models.Attempt, error) {
	t, attempts, err := readableTask(c, h.store)
	if err != nil {
		return nil, err
	}
	return models.LatestDeliverable(t.ID, attempts)
}

func (h *DeliverableAPI) open(c echo.Context, a *models.Attempt, path string) (io.ReadCloser, error) {
	if h.files == nil {
		return nil, noFiles(a.TaskID)
	}
	return h.files.Open(c.Request().Context(), a.TaskID, a.Number, path)
}

func noFiles(taskID int64) error {
	return models.Errorf(models.ENOTFOUND, "the files of task %d's deliverable are not served here", taskID)
}

// wildcardPath is the path the route's "*" names. Echo gives it still escaped when the
// request's path had escapes of its own (URL.RawPath), decoded otherwise.
func wildcardPath(c echo.Context) (string, error) {
	p := c.Param("*")
	if c.Request().URL.RawPath == "" {
		return p, nil
	}
	un, err := url.PathUnescape(p)
	if err != nil {
		return "", models.Errorf(models.EINVALID, "the file path is not a valid escaped path")
	}
	return un, nil
}

// attachment makes the response a download named name (reduced to characters no
// header or file system misreads), as opaque bytes no browser sniffs or renders.
func attachment(c echo.Context, name string) {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+safeFilename(name)+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
}

// safeFilename keeps letters, digits, '.', '-' and '_' of name and replaces anything
// else with '_', at most 100 characters; never empty, never starting with '.'.
func safeFilename(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case b.Len() >= 100:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s[0] == '.' {
		s = "file" + s
	}
	return s
}
