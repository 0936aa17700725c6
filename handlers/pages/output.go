package pages

import (
	"context"
	"io"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// outputRoutes registers the dashboard's downloads of a task's output file and its
// attestation on g (behind the session): GET /tasks/:id/output and
// /tasks/:id/attestation, the API's handlers (handlers.OutputAPI, AttestationAPI)
// with the signed-in person as the reader.
func (p *Pages) outputRoutes(g *echo.Group) {
	g.GET("/tasks/:id/output", handlers.NewOutputAPI(p.svc.Store(), p.d.Deliverables).Download, signedInActs)
	// The task's signed attestation (docs/attestations.md), as the API serves it.
	g.GET("/tasks/:id/attestation", handlers.NewAttestationAPI(p.svc.Ledger, nil).Task, signedInActs)
}

// outputView is task t's output as a page shows it: nil when the task has no verified
// output file; a view saying it cannot be read when this server cannot read it. What
// goes wrong reading it is logged, never shown: the log may name server paths.
func (p *Pages) outputView(ctx context.Context, t *models.Task, attempts []models.Attempt) *components.OutputView {
	return p.outputViewUpTo(ctx, t, attempts, components.OutputPageBytes)
}

// outputViewUpTo is outputView reading and showing at most limit bytes of the output.
func (p *Pages) outputViewUpTo(ctx context.Context, t *models.Task, attempts []models.Attempt, limit int) *components.OutputView {
	if t.Fingerprint == nil || t.Fingerprint.Output == "" {
		return nil
	}
	out, err := handlers.OpenOutput(ctx, t, attempts, p.d.Deliverables)
	if err != nil {
		return &components.OutputView{TaskID: t.ID, Name: t.Fingerprint.Output,
			Unavailable: "The output cannot be read on this server (its workspace was pruned, or the runner keeps it elsewhere)."}
	}
	defer out.Close()
	data, err := io.ReadAll(io.LimitReader(out, int64(limit)+1))
	if err != nil {
		p.d.Log.Warn("reading a task's output", "task_id", t.ID, "err", err)
		return &components.OutputView{TaskID: t.ID, Name: out.Name, Size: out.Size, Unavailable: "The output could not be read."}
	}
	v := components.NewOutputViewUpTo(t.ID, out.Name, out.Size, data, limit)
	v.Changed = out.Changed
	return &v
}

// withoutServerPath drops what follows "; output /" in a summary written before the
// runner named outputs by their workspace path: the server's layout stays off the
// page, and the output itself is shown beside it.
func withoutServerPath(s string) string {
	if i := strings.Index(s, "; output /"); i >= 0 {
		return s[:i]
	}
	return s
}

// advisoryOutput is the output of an advisory item's task t, for the inbox: at most
// OutputInboxBytes of it are read and rendered (the task page shows more, the
// download all), and its attempts are read only when a kept copy could be among them.
func (p *Pages) advisoryOutput(c echo.Context, t *models.Task) (*components.OutputView, error) {
	if t.Fingerprint == nil || t.Fingerprint.Output == "" {
		return nil, nil
	}
	var attempts []models.Attempt
	if p.d.Deliverables != nil { // without kept copies OpenOutput reads the workspace's file only
		var err error
		if attempts, err = p.svc.Store().ListAttempts(c.Request().Context(), t.ID); err != nil {
			return nil, err
		}
	}
	return p.outputViewUpTo(c.Request().Context(), t, attempts, components.OutputInboxBytes), nil
}
