package store

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
)

// Forges: the repositories on GitHub and GitLab that verified branches go to, the
// logins mapped to agents, each task's pull request and the webhook deliveries seen.

func init() {
	records = append(records, &forgeRecord{}, &forgeUserRecord{}, &forgePullRecord{}, &forgeDeliveryRecord{})
}

var _ models.ForgeStore = (*DB)(nil)

type forgeRecord struct {
	ID            int64 `gorm:"primaryKey"`
	Name          string
	Kind          string
	BaseURL       string `gorm:"column:base_url"`
	Repo          string
	TargetBranch  string
	Token         string
	WebhookSecret string
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt     time.Time `gorm:"autoUpdateTime:false"`
}

func (forgeRecord) TableName() string { return "forges" }

func (r *forgeRecord) model() *models.Forge {
	return &models.Forge{ID: r.ID, Name: r.Name, Kind: r.Kind, BaseURL: r.BaseURL, Repo: r.Repo, TargetBranch: r.TargetBranch,
		Token: r.Token, WebhookSecret: r.WebhookSecret, CreatedAt: normTime(r.CreatedAt), UpdatedAt: normTime(r.UpdatedAt)}
}

func toForgeRecord(f *models.Forge) *forgeRecord {
	return &forgeRecord{ID: f.ID, Name: f.Name, Kind: f.Kind, BaseURL: f.BaseURL, Repo: f.Repo, TargetBranch: f.TargetBranch,
		Token: f.Token, WebhookSecret: f.WebhookSecret, CreatedAt: normTime(f.CreatedAt), UpdatedAt: normTime(f.UpdatedAt)}
}

type forgeUserRecord struct {
	ForgeID int64 `gorm:"primaryKey;autoIncrement:false"`
	Login   string
	AgentID int64
}

func (forgeUserRecord) TableName() string { return "forge_users" }

type forgePullRecord struct {
	TaskID     int64 `gorm:"primaryKey;autoIncrement:false"`
	ForgeID    int64
	Number     int64
	URL        string `gorm:"column:url"`
	State      string
	CommitSHA  string `gorm:"column:commit_sha"`
	Status     string
	StatusNote string
	Moved      string
	Reviews    string
	MergeSHA   string `gorm:"column:merge_sha"`
	Error      string
	UpdatedAt  time.Time `gorm:"autoUpdateTime:false"`
}

func (forgePullRecord) TableName() string { return "forge_pulls" }

func (r *forgePullRecord) model() (*models.ForgePull, error) {
	p := &models.ForgePull{TaskID: r.TaskID, ForgeID: r.ForgeID, Number: r.Number, URL: r.URL, State: r.State,
		Commit: r.CommitSHA, Status: r.Status, StatusNote: r.StatusNote, Moved: r.Moved, MergeSHA: r.MergeSHA,
		Error: r.Error, UpdatedAt: normTime(r.UpdatedAt)}
	if err := fromJSON(r.Reviews, &p.Reviews, "forge_pulls.reviews"); err != nil {
		return nil, err
	}
	return p, nil
}

type forgeDeliveryRecord struct {
	ForgeID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Delivery   string `gorm:"primaryKey"`
	ReceivedAt time.Time
}

func (forgeDeliveryRecord) TableName() string { return "forge_deliveries" }

// CreateForge stores f and sets its ID; a name in use is ECONFLICT.
func (o *ops) CreateForge(ctx context.Context, f *models.Forge) error {
	if f.CreatedAt.IsZero() {
		f.CreatedAt = now()
	}
	f.UpdatedAt = now()
	rec := toForgeRecord(f)
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return conflictOr(err, "forge", "a forge named %q already exists", f.Name)
	}
	*f = *rec.model()
	return nil
}

// UpdateForge saves every field of f.
func (o *ops) UpdateForge(ctx context.Context, f *models.Forge) error {
	f.UpdatedAt = now()
	res := o.q(ctx).Select("*").Omit("id", "created_at").Where("id = ?", f.ID).Updates(toForgeRecord(f))
	if res.Error != nil {
		return conflictOr(res.Error, "forge", "a forge named %q already exists", f.Name)
	}
	if res.RowsAffected == 0 {
		return models.NotFound("forge", f.ID)
	}
	f.UpdatedAt = normTime(f.UpdatedAt)
	return nil
}

// GetForge returns forge id.
func (o *ops) GetForge(ctx context.Context, id int64) (*models.Forge, error) {
	var rec forgeRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "forge", id)
	}
	return rec.model(), nil
}

// GetForgeByName returns the forge called name.
func (o *ops) GetForgeByName(ctx context.Context, name string) (*models.Forge, error) {
	var rec forgeRecord
	if err := o.q(ctx).Take(&rec, "name = ?", name).Error; err != nil {
		return nil, readError(err, "forge", name)
	}
	return rec.model(), nil
}

// ListForges returns every forge by name.
func (o *ops) ListForges(ctx context.Context) ([]models.Forge, error) {
	var recs []forgeRecord
	if err := o.q(ctx).Order("name").Limit(1000).Find(&recs).Error; err != nil {
		return nil, mapError(err, "forges")
	}
	out := make([]models.Forge, 0, len(recs))
	for i := range recs {
		out = append(out, *recs[i].model())
	}
	return out, nil
}

// DeleteForge removes forge id with its mappings, pull requests and deliveries.
func (o *ops) DeleteForge(ctx context.Context, id int64) error {
	for _, r := range []any{&forgeUserRecord{}, &forgePullRecord{}, &forgeDeliveryRecord{}} {
		if err := o.q(ctx).Delete(r, "forge_id = ?", id).Error; err != nil {
			return mapError(err, "forge")
		}
	}
	res := o.q(ctx).Delete(&forgeRecord{}, "id = ?", id)
	if res.Error != nil {
		return mapError(res.Error, "forge")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("forge", id)
	}
	return nil
}

// PutForgeUser maps u.Login on forge u.ForgeID to agent u.AgentID.
func (o *ops) PutForgeUser(ctx context.Context, u *models.ForgeUser) error {
	if err := o.DeleteForgeUser(ctx, u.ForgeID, u.Login); err != nil && models.ErrorCode(err) != models.ENOTFOUND {
		return err
	}
	rec := &forgeUserRecord{ForgeID: u.ForgeID, Login: u.Login, AgentID: u.AgentID}
	return mapError(o.q(ctx).Create(rec).Error, "forge user")
}

// DeleteForgeUser removes login's mapping; ENOTFOUND when there is none.
func (o *ops) DeleteForgeUser(ctx context.Context, forgeID int64, login string) error {
	res := o.q(ctx).Delete(&forgeUserRecord{}, "forge_id = ? AND login = ?", forgeID, login)
	if res.Error != nil {
		return mapError(res.Error, "forge user")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("forge user", login)
	}
	return nil
}

// ForgeUserAgent returns the agent login maps to on the forge.
func (o *ops) ForgeUserAgent(ctx context.Context, forgeID int64, login string) (*models.Agent, error) {
	var rec forgeUserRecord
	if err := o.q(ctx).Take(&rec, "forge_id = ? AND login = ?", forgeID, login).Error; err != nil {
		return nil, readError(err, "forge user", login)
	}
	return o.GetAgent(ctx, rec.AgentID)
}

// ListForgeUsers returns a forge's mappings by login, with the agents' names.
func (o *ops) ListForgeUsers(ctx context.Context, forgeID int64) ([]models.ForgeUser, error) {
	var rows []struct {
		User  forgeUserRecord `gorm:"embedded"` // named: gorm cannot fill an unexported embedded struct
		Agent string
	}
	err := o.q(ctx).Model(&forgeUserRecord{}).Select("forge_users.*, agents.name AS agent").
		Joins("JOIN agents ON agents.id = forge_users.agent_id").
		Where("forge_users.forge_id = ?", forgeID).Order("login").Limit(1000).Find(&rows).Error
	if err != nil {
		return nil, mapError(err, "forge users")
	}
	out := make([]models.ForgeUser, len(rows))
	for i, r := range rows {
		out[i] = models.ForgeUser{ForgeID: r.User.ForgeID, Login: r.User.Login, AgentID: r.User.AgentID, Agent: r.Agent}
	}
	return out, nil
}

// GetForgePull returns task taskID's pull request.
func (o *ops) GetForgePull(ctx context.Context, taskID int64) (*models.ForgePull, error) {
	var rec forgePullRecord
	if err := o.q(ctx).Take(&rec, "task_id = ?", taskID).Error; err != nil {
		return nil, readError(err, "pull request of task", taskID)
	}
	return rec.model()
}

// LockForgePull returns task taskID's pull request, locked until the tx ends.
func (o *ops) LockForgePull(ctx context.Context, taskID int64) (*models.ForgePull, error) {
	var rec forgePullRecord
	if err := o.forUpdate(o.q(ctx)).Take(&rec, "task_id = ?", taskID).Error; err != nil {
		return nil, readError(err, "pull request of task", taskID)
	}
	return rec.model()
}

// FindForgePull returns pull request number on forge forgeID.
func (o *ops) FindForgePull(ctx context.Context, forgeID, number int64) (*models.ForgePull, error) {
	var rec forgePullRecord
	if err := o.q(ctx).Order("task_id DESC").Take(&rec, "forge_id = ? AND number = ?", forgeID, number).Error; err != nil {
		return nil, readError(err, "pull request", number)
	}
	return rec.model()
}

// SaveForgePull inserts or replaces p.
func (o *ops) SaveForgePull(ctx context.Context, p *models.ForgePull) error {
	reviews, err := toJSON(p.Reviews, "[]")
	if err != nil {
		return err
	}
	p.UpdatedAt = now()
	rec := &forgePullRecord{TaskID: p.TaskID, ForgeID: p.ForgeID, Number: p.Number, URL: p.URL, State: p.State,
		CommitSHA: p.Commit, Status: p.Status, StatusNote: p.StatusNote, Moved: p.Moved, Reviews: reviews,
		MergeSHA: p.MergeSHA, Error: p.Error, UpdatedAt: p.UpdatedAt}
	return mapError(o.q(ctx).Save(rec).Error, "pull request")
}

// ListOpenForgePulls returns the open pull requests, oldest task first.
func (o *ops) ListOpenForgePulls(ctx context.Context) ([]models.ForgePull, error) {
	var recs []forgePullRecord
	if err := o.q(ctx).Where("state = ?", models.PullOpen).Order("task_id").Limit(10000).Find(&recs).Error; err != nil {
		return nil, mapError(err, "pull requests")
	}
	out := make([]models.ForgePull, 0, len(recs))
	for i := range recs {
		p, err := recs[i].model()
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// TasksWithoutPull returns tasks with a verified commit whose agent names a forge,
// settled since that forge was added, not merged in Countersign, that no other live
// task depends on, and that have no pull request yet.
func (o *ops) TasksWithoutPull(ctx context.Context, limit int) ([]models.Task, error) {
	var recs []taskRecord
	err := o.q(ctx).Model(&taskRecord{}).
		Joins("JOIN agents ON agents.id = tasks.builder_id AND agents.forge <> ''").
		// Work settled before its forge was added is not sent there after the fact.
		Joins("JOIN forges ON forges.name = agents.forge AND tasks.updated_at >= forges.created_at").
		Where("tasks.verified_commit <> '' AND tasks.canary = '' AND tasks.state IN ?", []string{string(models.TaskCompleted), string(models.TaskVerified)}).
		Where("NOT EXISTS (SELECT 1 FROM forge_pulls p WHERE p.task_id = tasks.id)").
		// Work a lead merged in Countersign has landed already.
		Where("NOT EXISTS (SELECT 1 FROM events e WHERE e.task_id = tasks.id AND e.type = ?)", models.EventTaskMerged).
		// A step that later steps build on travels in their pull request.
		Where("NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks n ON n.id = d.task_id WHERE d.depends_on_id = tasks.id AND n.state <> ?)", string(models.TaskCancelled)).
		Order("tasks.id").Limit(limit).Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "tasks")
	}
	out := make([]models.Task, 0, len(recs))
	for i := range recs {
		t, err := fromTaskRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// AddForgeDelivery records a delivery id; ECONFLICT when it was already received.
func (o *ops) AddForgeDelivery(ctx context.Context, forgeID int64, delivery string, at time.Time) error {
	err := o.q(ctx).Create(&forgeDeliveryRecord{ForgeID: forgeID, Delivery: delivery, ReceivedAt: normTime(at)}).Error
	return conflictOr(err, "forge delivery", "delivery %s was already received", delivery)
}

// PruneForgeDeliveries forgets the delivery ids received before before.
func (o *ops) PruneForgeDeliveries(ctx context.Context, before time.Time) error {
	return mapError(o.q(ctx).Delete(&forgeDeliveryRecord{}, "received_at < ?", normTime(before)).Error, "forge deliveries")
}
