package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"

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
func (s *AgentService) CreateAgent(ctx context.Context, actor *Agent, a *Agent, password string) error {
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
		if err := checkAgentForge(ctx, tx, a); err != nil {
			return err
		}
		if err := tx.CreateAgent(ctx, a); err != nil {
			return err
		}
		data := agentEventData(a)
		data["by"] = actorName(actor)
		return s.emitAbout(ctx, tx, "agent.created", actor, a.ID, data)
	})
}

// UpdateAgent saves an agent's roles, command, workdir, worktree, concurrency,
// disabled flag and sandbox settings. Only an admin may. Every change is an
// agent.changed event naming who changed which fields, with their values before and
// after (see AgentChanges); a save that changes nothing records nothing.
func (s *AgentService) UpdateAgent(ctx context.Context, actor *Agent, a *Agent) error {
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
		if err := checkAgentForge(ctx, tx, a); err != nil {
			return err
		}
		changes := AgentChanges(cur, a)
		if err := tx.UpdateAgent(ctx, a); err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		if cur.Disabled && !a.Disabled {
			// Enabled again: an agent the runner paused is back (see PauseAgent).
			if err := s.resolveAgentPaused(ctx, tx, actor, a); err != nil {
				return err
			}
		}
		return s.emitAbout(ctx, tx, AgentChangedEvent, actor, a.ID,
			map[string]any{"agent": a.Name, "by": actorName(actor), "changes": changes})
	})
}

// checkAgentForge refuses an agent that names a forge that does not exist, or names
// one without working in git worktrees (only a task branch can become a pull request).
func checkAgentForge(ctx context.Context, tx Tx, a *Agent) error {
	if a.Forge == "" {
		return nil
	}
	field := func(msg string) error {
		return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"forge": msg}}
	}
	if !a.Worktree {
		return field("needs --worktree: only a task branch can become a pull request")
	}
	ftx, ok := tx.(ForgeTx)
	if !ok {
		return Errorf(EINTERNAL, "this store keeps no forges")
	}
	if _, err := ftx.GetForgeByName(ctx, a.Forge); ErrorCode(err) == ENOTFOUND {
		return field("no forge is called " + a.Forge)
	} else if err != nil {
		return err
	}
	return nil
}

func agentEventData(a *Agent) map[string]any {
	return map[string]any{"agent": a.Name, "kind": a.Kind, "roles": a.Roles, "command": a.Command,
		"workdir": a.Workdir, "worktree": a.Worktree, "target_branch": a.TargetBranch, "forge": a.Forge, "concurrency": a.Concurrency, "disabled": a.Disabled,
		"sandbox": a.Sandbox}
}

// SetPassword stores a bcrypt hash of password after checking it (see
// PasswordProblem): a password it refuses is an EINVALID error naming "password".
func (a *Agent) SetPassword(password string) error {
	if msg := PasswordProblem(password); msg != "" {
		return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"password": msg}}
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

// RunnerAgent returns the built-in system agent that stands for the runner.
func (s *AgentService) RunnerAgent(ctx context.Context) (*Agent, error) {
	return s.store.GetAgentByName(ctx, RunnerAgentName)
}
