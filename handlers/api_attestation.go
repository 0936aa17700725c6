package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// AttestationAPI serves verified tasks' signed attestations (runner/attest) and the
// public key they verify with.
type AttestationAPI struct {
	reader AttestationReader
	key    []byte // PEM; nil when this server signs nothing
}

// NewAttestationAPI returns the attestation endpoints; key is the signing key's public
// half as PEM (nil: GET /attestations/key answers 404).
func NewAttestationAPI(reader AttestationReader, key []byte) *AttestationAPI {
	return &AttestationAPI{reader: reader, key: key}
}

// Register adds GET /tasks/:id/attestation and GET /attestations/key to g.
func (h *AttestationAPI) Register(g *echo.Group) {
	g.GET("/tasks/:id/attestation", h.Task)
	g.GET("/attestations/key", h.Key)
}

// Task answers GET /tasks/{id}/attestation: the DSSE envelope of the task's newest
// attestation, byte for byte as signed and stored, as a download. Headers name the
// ledger entry that records its digest and say whether it was revoked since; a
// revoked attestation is still served, so that a verifier can say it is revoked.
func (h *AttestationAPI) Task(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	e, revoked, err := h.reader.TaskAttestation(c.Request().Context(), id)
	if err != nil {
		return err
	}
	hd := c.Response().Header()
	hd.Set("X-Ledger-Entry", strconv.FormatInt(e.ID, 10))
	hd.Set("X-Ledger-Status", e.Status)
	if m, err := ledger.ParseMessage(e.Message); err == nil {
		hd.Set("X-Attestation-Digest", "sha256:"+m.Attestation)
	}
	if e.Sequence > 0 {
		hd.Set("X-Ledger-Sequence", strconv.FormatInt(e.Sequence, 10))
	}
	hd.Set("X-Attestation-Revoked", strconv.FormatBool(revoked))
	hd.Set(echo.HeaderContentDisposition, `attachment; filename="task-`+strconv.FormatInt(id, 10)+`.intoto.json"`)
	return c.Blob(http.StatusOK, "application/json", e.Attestation)
}

// Key answers GET /attestations/key: the PEM public key every attestation this
// server signs verifies with.
func (h *AttestationAPI) Key(c echo.Context) error {
	if len(h.key) == 0 {
		return models.Errorf(models.ENOTFOUND, "this server signs no attestations")
	}
	return c.Blob(http.StatusOK, "application/x-pem-file", h.key)
}
