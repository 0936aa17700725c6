package store

import (
	"context"
	"strconv"
	"time"

	"github.com/countersign/countersign/models"
)

// agentRecord is a row of agents; roles is a JSON array.
type agentRecord struct {
	ID           int64 `gorm:"primaryKey"`
	Name         string
	Kind         string
	Roles        string
	Command      string
	Workdir      string
	Worktree     bool
	TargetBranch string
	Forge        string
	Concurrency  int
	Disabled     bool
	PasswordHash string
	// The sandbox settings: JSON arrays of paths and ports.
	SandboxRead      string
	SandboxWrite     string
	SandboxConnect   string
	SandboxAllowUnix bool
	PassEnv          string
	DailyBudget      string
	CreatedAt        time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt        time.Time `gorm:"autoUpdateTime:false"`
}

func (agentRecord) TableName() string { return "agents" }

func toAgentRecord(a *models.Agent) (*agentRecord, error) {
	roles, err := toJSON(a.Roles, "[]")
	if err != nil {
		return nil, err
	}
	var sb [3]string
	for i, v := range []any{a.Sandbox.Read, a.Sandbox.Write, a.Sandbox.Connect} {
		if sb[i], err = toJSON(v, "[]"); err != nil {
			return nil, err
		}
	}
	passEnv, err := toJSON(a.PassEnv, "[]")
	if err != nil {
		return nil, err
	}
	return &agentRecord{
		PassEnv:      passEnv,
		DailyBudget:  budgetJSON(a.DailyBudget),
		ID:           a.ID,
		Name:         a.Name,
		Kind:         string(a.Kind),
		Roles:        roles,
		Command:      a.Command,
		Workdir:      a.Workdir,
		Worktree:     a.Worktree,
		TargetBranch: a.TargetBranch,
		Forge:        a.Forge,
		Concurrency:  a.Concurrency,
		Disabled:     a.Disabled,
		PasswordHash: a.PasswordHash,
		CreatedAt:    normTime(a.CreatedAt),
		UpdatedAt:    normTime(a.UpdatedAt),

		SandboxRead:      sb[0],
		SandboxWrite:     sb[1],
		SandboxConnect:   sb[2],
		SandboxAllowUnix: a.Sandbox.AllowUnix,
	}, nil
}

func fromAgentRecord(r *agentRecord) (*models.Agent, error) {
	a := &models.Agent{
		ID:           r.ID,
		Name:         r.Name,
		Kind:         models.AgentKind(r.Kind),
		Command:      r.Command,
		Workdir:      r.Workdir,
		Worktree:     r.Worktree,
		TargetBranch: r.TargetBranch,
		Forge:        r.Forge,
		Concurrency:  r.Concurrency,
		Disabled:     r.Disabled,
		PasswordHash: r.PasswordHash,
		CreatedAt:    normTime(r.CreatedAt),
		UpdatedAt:    normTime(r.UpdatedAt),
		Sandbox:      models.AgentSandbox{AllowUnix: r.SandboxAllowUnix},
		DailyBudget:  budgetOf(r.DailyBudget),
	}
	if err := fromJSON(r.PassEnv, &a.PassEnv, "agents.pass_env"); err != nil {
		return nil, err
	}
	if len(a.PassEnv) == 0 {
		a.PassEnv = nil
	}
	if err := fromJSON(r.Roles, &a.Roles, "agents.roles"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.SandboxRead, &a.Sandbox.Read, "agents.sandbox_read"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.SandboxWrite, &a.Sandbox.Write, "agents.sandbox_write"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.SandboxConnect, &a.Sandbox.Connect, "agents.sandbox_connect"); err != nil {
		return nil, err
	}
	a.Sandbox.Normalize() // [] reads back as nil, as an unset list is
	if a.Roles == nil {
		a.Roles = []string{}
	}
	return a, nil
}

// sessionRecord is a row of sessions.
type sessionRecord struct {
	ID        string `gorm:"primaryKey"`
	AgentID   int64
	CSRF      string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt time.Time
}

func (sessionRecord) TableName() string { return "sessions" }

// CreateAgent stores a new agent and sets a.ID. A taken name is an ECONFLICT.
func (o *ops) CreateAgent(ctx context.Context, a *models.Agent) error {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now()
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = a.CreatedAt
	}
	rec, err := toAgentRecord(a)
	if err != nil {
		return err
	}
	rec.ID = 0
	err = o.atomic(ctx, func(o *ops) error {
		if err := o.q(ctx).Create(rec).Error; err != nil {
			return conflictOr(err, "agent", "an agent named %q already exists", a.Name)
		}
		a.ID = rec.ID
		return o.syncSlots(ctx, a)
	})
	if err != nil {
		return err
	}
	out, err := fromAgentRecord(rec)
	if err != nil {
		return err
	}
	*a = *out
	o.memoAgent(a)
	return nil
}

// UpdateAgent saves every field of a but CreatedAt and sets UpdatedAt.
func (o *ops) UpdateAgent(ctx context.Context, a *models.Agent) error {
	a.UpdatedAt = now()
	rec, err := toAgentRecord(a)
	if err != nil {
		return err
	}
	o.forgetAgent(a.ID) // whatever happens next, the memo must not outlive the row
	err = o.atomic(ctx, func(o *ops) error {
		res := o.q(ctx).Model(rec).Select("*").Omit("id", "created_at").Updates(rec)
		if res.Error != nil {
			return conflictOr(res.Error, "agent", "an agent named %q already exists", a.Name)
		}
		if res.RowsAffected == 0 {
			return models.NotFound("agent", a.ID)
		}
		return o.syncSlots(ctx, a)
	})
	if err != nil {
		return err
	}
	out, err := fromAgentRecord(rec)
	if err != nil {
		return err
	}
	*a = *out
	o.memoAgent(a)
	return nil
}

// GetAgent returns the agent with this id. Inside a transaction an agent is read once:
// later calls return a copy of what was read (or written) before.
func (o *ops) GetAgent(ctx context.Context, id int64) (*models.Agent, error) {
	if a := o.memoByID(id); a != nil {
		return a, nil
	}
	return o.takeAgent(ctx, "id = ?", id, id)
}

// GetAgentByName returns the agent with this name; inside a transaction it is read
// once, as for GetAgent.
func (o *ops) GetAgentByName(ctx context.Context, name string) (*models.Agent, error) {
	if a := o.memoByName(name); a != nil {
		return a, nil
	}
	return o.takeAgent(ctx, "name = ?", name, strconv.Quote(name))
}

func (o *ops) takeAgent(ctx context.Context, where string, arg, key any) (*models.Agent, error) {
	var rec agentRecord
	if err := o.q(ctx).Take(&rec, where, arg).Error; err != nil {
		return nil, readError(err, "agent", key)
	}
	a, err := fromAgentRecord(&rec)
	if err != nil {
		return nil, err
	}
	o.memoAgent(a)
	return a, nil
}

// ListAgents returns every agent, by name.
func (o *ops) ListAgents(ctx context.Context) ([]models.Agent, error) {
	var recs []agentRecord
	if err := o.q(ctx).Order("name").Find(&recs).Error; err != nil {
		return nil, mapError(err, "agents")
	}
	out := make([]models.Agent, 0, len(recs))
	for i := range recs {
		a, err := fromAgentRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// CreateSession stores a session, first deleting the expired ones.
func (o *ops) CreateSession(ctx context.Context, s *models.Session) error {
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now()
	}
	if err := o.q(ctx).Where("expires_at < ?", now()).Delete(&sessionRecord{}).Error; err != nil {
		return mapError(err, "session")
	}
	rec := &sessionRecord{
		ID:        s.ID,
		AgentID:   s.AgentID,
		CSRF:      s.CSRF,
		CreatedAt: normTime(s.CreatedAt),
		ExpiresAt: normTime(s.ExpiresAt),
	}
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return conflictOr(err, "session", "a session with this id already exists")
	}
	s.CreatedAt, s.ExpiresAt = rec.CreatedAt, rec.ExpiresAt
	return nil
}

// GetSession returns the session with this id; an expired session is ENOTFOUND.
func (o *ops) GetSession(ctx context.Context, id string) (*models.Session, error) {
	var rec sessionRecord
	err := o.q(ctx).Take(&rec, "id = ? AND expires_at > ?", id, now()).Error
	if err != nil {
		if isNotFound(err) {
			// The id is a credential's hash: never echo it.
			return nil, models.Errorf(models.ENOTFOUND, "session not found")
		}
		return nil, mapError(err, "session")
	}
	return &models.Session{
		ID:        rec.ID,
		AgentID:   rec.AgentID,
		CSRF:      rec.CSRF,
		CreatedAt: normTime(rec.CreatedAt),
		ExpiresAt: normTime(rec.ExpiresAt),
	}, nil
}

// DeleteSession deletes the session; deleting a missing one is not an error.
func (o *ops) DeleteSession(ctx context.Context, id string) error {
	return mapError(o.q(ctx).Delete(&sessionRecord{}, "id = ?", id).Error, "session")
}
