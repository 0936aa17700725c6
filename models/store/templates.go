package store

import (
	"context"
	"strconv"
	"time"

	"github.com/countersign/countersign/models"
)

// templateRecord is a row of templates: one version of a named template; steps is a
// JSON array.
type templateRecord struct {
	ID          int64 `gorm:"primaryKey"`
	Name        string
	Version     int
	Description string
	Steps       string
	CreatorID   *int64    // NULL: created by the operator from the command line
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
}

func (templateRecord) TableName() string { return "templates" }

// runRecord is a row of runs; params is a JSON object.
type runRecord struct {
	ID              int64 `gorm:"primaryKey"`
	GoalID          int64
	TemplateName    string
	TemplateVersion int
	Params          string
	CreatorID       *int64    // NULL: created by the operator from the command line
	CreatedAt       time.Time `gorm:"autoCreateTime:false"`
}

func (runRecord) TableName() string { return "runs" }

func fromTemplateRecord(r *templateRecord) (*models.Template, error) {
	t := &models.Template{
		ID:          r.ID,
		Name:        r.Name,
		Version:     r.Version,
		Description: r.Description,
		CreatorID:   creatorID(r.CreatorID),
		CreatedAt:   normTime(r.CreatedAt),
	}
	if err := fromJSON(r.Steps, &t.Steps, "templates.steps"); err != nil {
		return nil, err
	}
	if t.Steps == nil {
		t.Steps = []models.Step{}
	}
	return t, nil
}

func fromTemplateRecords(recs []templateRecord) ([]models.Template, error) {
	out := make([]models.Template, 0, len(recs))
	for i := range recs {
		t, err := fromTemplateRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// CreateTemplate saves t as the next version of its name (1 for a new name) and sets
// t.ID and t.Version; the Version passed in is ignored. Two saves of one name racing
// each other make one of them an ECONFLICT.
func (o *ops) CreateTemplate(ctx context.Context, t *models.Template) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	steps, err := toJSON(t.Steps, "[]")
	if err != nil {
		return err
	}
	rec := &templateRecord{
		Name:        t.Name,
		Description: t.Description,
		Steps:       steps,
		CreatorID:   creatorRef(t.CreatorID),
		CreatedAt:   normTime(t.CreatedAt),
	}
	err = o.atomic(ctx, func(o *ops) error {
		var latest int
		if err := o.q(ctx).Model(&templateRecord{}).Where("name = ?", t.Name).
			Select("COALESCE(MAX(version), 0)").Scan(&latest).Error; err != nil {
			return mapError(err, "template")
		}
		rec.Version = latest + 1
		if err := o.q(ctx).Create(rec).Error; err != nil {
			return conflictOr(err, "template", "template %q was saved by someone else at the same time; try again", t.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	out, err := fromTemplateRecord(rec)
	if err != nil {
		return err
	}
	*t = *out
	return nil
}

// GetTemplate returns one version of a template; version 0 means the latest.
func (o *ops) GetTemplate(ctx context.Context, name string, version int) (*models.Template, error) {
	var rec templateRecord
	q := o.q(ctx).Where("name = ?", name)
	key := strconv.Quote(name)
	if version > 0 {
		q = q.Where("version = ?", version)
		key += " version " + strconv.Itoa(version)
	} else {
		q = q.Order("version DESC")
	}
	if err := q.Take(&rec).Error; err != nil {
		return nil, readError(err, "template", key)
	}
	return fromTemplateRecord(&rec)
}

// ListTemplates returns the latest version of every template, by name.
func (o *ops) ListTemplates(ctx context.Context) ([]models.Template, error) {
	var recs []templateRecord
	latest := o.q(ctx).Model(&templateRecord{}).Select("name, MAX(version) AS version").Group("name")
	err := o.q(ctx).Table("templates AS t").Select("t.*").
		Joins("JOIN (?) AS l ON l.name = t.name AND l.version = t.version", latest).
		Order("t.name").Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "templates")
	}
	return fromTemplateRecords(recs)
}

// ListTemplateVersions returns every version of a template, oldest first; none is an
// empty list, not an error.
func (o *ops) ListTemplateVersions(ctx context.Context, name string) ([]models.Template, error) {
	var recs []templateRecord
	if err := o.q(ctx).Where("name = ?", name).Order("version").Find(&recs).Error; err != nil {
		return nil, mapError(err, "templates")
	}
	return fromTemplateRecords(recs)
}

// CreateRun stores a run and sets r.ID. The goal and the template version must exist
// (else EINVALID).
func (o *ops) CreateRun(ctx context.Context, r *models.Run) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now()
	}
	params, err := toJSON(r.Params, "{}")
	if err != nil {
		return err
	}
	rec := &runRecord{
		GoalID:          r.GoalID,
		TemplateName:    r.TemplateName,
		TemplateVersion: r.TemplateVersion,
		Params:          params,
		CreatorID:       creatorRef(r.CreatorID),
		CreatedAt:       normTime(r.CreatedAt),
	}
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return mapError(err, "run")
	}
	out, err := fromRunRecord(rec)
	if err != nil {
		return err
	}
	*r = *out
	return nil
}

// GetRun returns the run with this id.
func (o *ops) GetRun(ctx context.Context, id int64) (*models.Run, error) {
	var rec runRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "run", id)
	}
	return fromRunRecord(&rec)
}

func fromRunRecord(r *runRecord) (*models.Run, error) {
	run := &models.Run{
		ID:              r.ID,
		GoalID:          r.GoalID,
		TemplateName:    r.TemplateName,
		TemplateVersion: r.TemplateVersion,
		CreatorID:       creatorID(r.CreatorID),
		CreatedAt:       normTime(r.CreatedAt),
	}
	if err := fromJSON(r.Params, &run.Params, "runs.params"); err != nil {
		return nil, err
	}
	if len(run.Params) == 0 {
		run.Params = nil
	}
	return run, nil
}
