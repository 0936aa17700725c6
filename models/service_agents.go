package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// System is the actor for operations an operator runs from the command line on the
// machine itself (migrate, agent add, token create): it passes role checks that
// protect the network interfaces, and is recorded as no agent in events.
var System = &Agent{Name: "system", Kind: KindSystem, Roles: []string{RoleAdmin, RoleLead, RoleExec}}

// MinPasswordLength is the shortest dashboard password accepted.
const MinPasswordLength = 10

// CreateAgent adds an agent. Only an admin may create one, because a worker's command
// runs on every runner host. A non-empty password is stored as a bcrypt hash.
func (s *Service) CreateAgent(ctx context.Context, actor *Agent, a *Agent, password string) error {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return err
	}
	a.Normalize()
	if err := a.Validate(); err != nil {
		return err
	}
	if a.Kind == KindSystem {
		return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"kind": "must be worker or human"}}
	}
	if password != "" {
		if err := a.SetPassword(password); err != nil {
			return err
		}
	}
	now := s.now()
	a.CreatedAt, a.UpdatedAt = now, now
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.CreateAgent(ctx, a); err != nil {
			return err
		}
		return s.emit(ctx, tx, "agent.created", actor, nil, nil, agentEventData(a))
	})
}

// UpdateAgent saves an agent's roles, command, workdir, concurrency and disabled flag.
// Only an admin may; every change is an event that records the command.
func (s *Service) UpdateAgent(ctx context.Context, actor *Agent, a *Agent) error {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return err
	}
	a.Normalize()
	if err := a.Validate(); err != nil {
		return err
	}
	a.UpdatedAt = s.now()
	return s.store.InTx(ctx, func(tx Tx) error {
		cur, err := tx.GetAgent(ctx, a.ID)
		if err != nil {
			return err
		}
		if cur.Kind == KindSystem {
			return Forbidden("runner_immutable", "the runner agent cannot be changed")
		}
		a.Name, a.Kind, a.CreatedAt = cur.Name, cur.Kind, cur.CreatedAt
		if a.PasswordHash == "" {
			a.PasswordHash = cur.PasswordHash
		}
		if err := tx.UpdateAgent(ctx, a); err != nil {
			return err
		}
		return s.emit(ctx, tx, "agent.updated", actor, nil, nil, agentEventData(a))
	})
}

func agentEventData(a *Agent) map[string]any {
	return map[string]any{"agent": a.Name, "kind": a.Kind, "roles": a.Roles, "command": a.Command,
		"workdir": a.Workdir, "concurrency": a.Concurrency, "disabled": a.Disabled}
}

// SetPassword stores a bcrypt hash of password after checking its length.
func (a *Agent) SetPassword(password string) error {
	if len(password) < MinPasswordLength {
		return &Error{Code: EINVALID, Message: "validation failed",
			Fields: map[string]string{"password": "must be at least 10 characters"}}
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	a.PasswordHash = string(h)
	return nil
}

// CheckPassword reports whether password matches the stored hash.
func (a *Agent) CheckPassword(password string) bool {
	return a.PasswordHash != "" && bcrypt.CompareHashAndPassword([]byte(a.PasswordHash), []byte(password)) == nil
}

// NewSecret returns a random URL-safe secret with the given prefix.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret returns the hex SHA-256 of a token or session secret: what is stored.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// CreateToken issues a bearer token for the named agent and returns the secret, which
// is shown once; only its hash is stored. Only an admin may issue tokens.
func (s *Service) CreateToken(ctx context.Context, actor *Agent, agentName, name string) (string, error) {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return "", err
	}
	secret := NewSecret("cs_")
	err := s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(agentName)))
		if err != nil {
			return err
		}
		if a.Kind == KindSystem {
			return Forbidden("runner_immutable", "the runner agent has no tokens")
		}
		t := &Token{AgentID: a.ID, Name: name, Hash: HashSecret(secret), CreatedAt: s.now()}
		if err := tx.CreateToken(ctx, t); err != nil {
			return err
		}
		return s.emit(ctx, tx, "token.created", actor, nil, nil, map[string]any{"agent": a.Name, "name": name})
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// Authenticate returns the agent owning a bearer token, or EUNAUTHORIZED.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Agent, error) {
	if secret == "" {
		return nil, Errorf(EUNAUTHORIZED, "missing bearer token")
	}
	a, err := s.store.AgentByTokenHash(ctx, HashSecret(secret))
	if ErrorCode(err) == ENOTFOUND {
		return nil, Errorf(EUNAUTHORIZED, "invalid bearer token")
	}
	return a, err
}

// RunnerAgent returns the built-in system agent that stands for the runner.
func (s *Service) RunnerAgent(ctx context.Context) (*Agent, error) {
	return s.store.GetAgentByName(ctx, RunnerAgentName)
}
