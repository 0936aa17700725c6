package handlers

import (
	"io"
	"math"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// TemplatesAPI serves /api/v1/templates and /api/v1/rules.
type TemplatesAPI struct {
	store     models.Store
	templates TemplateWriter
}

// NewTemplatesAPI returns the template and rules endpoints over svc.
func NewTemplatesAPI(store models.Store, templates TemplateWriter) *TemplatesAPI {
	return &TemplatesAPI{store: store, templates: templates}
}

// maxTemplateBytes bounds a template body.
const maxTemplateBytes = 1 << 20

// List answers GET /templates: the latest version of each, its steps' held-out tests
// only for the readers who may set them (TemplateFor).
func (h *TemplatesAPI) List(c echo.Context) error {
	ts, err := h.store.ListTemplates(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"templates": nonNil(TemplatesFor(Actor(c), ts))})
}

// Get answers GET /templates/{name}?version=N (latest by default), as JSON, or as
// YAML with ?format=yaml; held-out tests only for the readers who may set them.
func (h *TemplatesAPI) Get(c echo.Context) error {
	var fe models.FieldErrors
	version := QueryIntIn(c, "version", 1, math.MaxInt32, &fe) // versions are stored as 32-bit integers
	if err := fe.Err(); err != nil {
		return err
	}
	t, err := h.store.GetTemplate(c.Request().Context(), c.Param("name"), version)
	if err != nil {
		return err
	}
	t = TemplateFor(Actor(c), t)
	if c.QueryParam("format") == "yaml" {
		b, err := TemplateYAML(t)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, "application/yaml", b)
	}
	return c.JSON(http.StatusOK, t)
}

// Create answers POST /templates with a YAML or JSON body; it saves a new version.
// A bare steps: document takes its name from ?name=.
func (h *TemplatesAPI) Create(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxTemplateBytes+1))
	if err != nil {
		return models.Errorf(models.EBADREQUEST, "could not read the request body")
	}
	if len(body) > maxTemplateBytes {
		return models.Errorf(models.ETOOLARGE, "template larger than 1 MiB")
	}
	t, err := models.ParseTemplate(body)
	if err != nil {
		return err
	}
	if err := models.CheckText(t); err != nil {
		return err // YAML's "\0" escape decodes to a NUL the raw body does not show
	}
	if t.Name == "" {
		t.Name = c.QueryParam("name")
	}
	if err := h.templates.SaveTemplate(c.Request().Context(), Actor(c), t); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, TemplateFor(Actor(c), t))
}

// GetRules answers GET /rules.
func (h *TemplatesAPI) GetRules(c echo.Context) error {
	r, err := h.templates.Rules(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// PutRules answers PUT /rules.
func (h *TemplatesAPI) PutRules(c echo.Context) error {
	var r models.ProjectRules
	if err := DecodeJSON(c, &r); err != nil {
		return err
	}
	if err := h.templates.SaveRules(c.Request().Context(), Actor(c), &r); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
