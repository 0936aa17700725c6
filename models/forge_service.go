package models

import (
	"context"
	"strings"
	"time"
)

// Forges manages the forges and their login mappings: admins only, every change an
// event (forge.*) naming the forge, its kind and repository, never its token or
// webhook secret.
type Forges struct {
	store ForgeStore
	c     *core
}

// NewForges returns the forge admin service over svc's store; EINTERNAL when that
// store keeps no forges.
func NewForges(svc *Service) (*Forges, error) {
	fs, ok := svc.c.store.(ForgeStore)
	if !ok {
		return nil, Errorf(EINTERNAL, "this store keeps no forges")
	}
	return &Forges{store: fs, c: svc.c}, nil
}

// Store returns the forge store, for readers and the sync.
func (s *Forges) Store() ForgeStore { return s.store }

// Now is the service's clock.
func (s *Forges) Now() time.Time { return s.c.now() }

// Emit records an event about task taskID (0: none) in tx, as actor.
func (s *Forges) Emit(ctx context.Context, tx Tx, typ string, actor *Agent, taskID int64, data map[string]any) error {
	var id *int64
	if taskID != 0 {
		id = &taskID
	}
	return s.c.emit(ctx, tx, typ, actor, id, nil, data)
}

func (s *Forges) change(ctx context.Context, actor *Agent, typ string, data func() map[string]any, fn func(tx ForgeTx) error) error {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(t Tx) error {
		tx, ok := t.(ForgeTx)
		if !ok {
			return Errorf(EINTERNAL, "this store keeps no forges")
		}
		if err := fn(tx); err != nil {
			return err
		}
		return s.c.emit(ctx, tx, typ, actor, nil, nil, data())
	})
}

func forgeFacts(f *Forge) map[string]any {
	return map[string]any{"forge_id": f.ID, "name": f.Name, "kind": f.Kind, "repo": f.Repo}
}

// Create adds a forge with a new webhook secret and returns that secret, shown only
// now (it goes into the forge's webhook form).
func (s *Forges) Create(ctx context.Context, actor *Agent, f *Forge) (string, error) {
	if err := f.Validate(true); err != nil {
		return "", err
	}
	f.ID, f.WebhookSecret = 0, NewForgeWebhookSecret()
	f.CreatedAt, f.UpdatedAt = s.c.now(), s.c.now()
	err := s.change(ctx, actor, "forge.created", func() map[string]any { return forgeFacts(f) }, func(tx ForgeTx) error {
		return tx.CreateForge(ctx, f)
	})
	if err != nil {
		return "", err
	}
	return f.WebhookSecret, nil
}

// Update saves the kind, base URL, repository and target branch of forge in.Name, and
// its token when in.Token is not empty (a new token replaces the old one).
func (s *Forges) Update(ctx context.Context, actor *Agent, in *Forge) (*Forge, error) {
	if err := in.Validate(false); err != nil {
		return nil, err
	}
	var f *Forge
	err := s.change(ctx, actor, "forge.updated", func() map[string]any {
		d := forgeFacts(f)
		d["token_replaced"] = in.Token != ""
		return d
	}, func(tx ForgeTx) error {
		cur, err := tx.GetForgeByName(ctx, in.Name)
		if err != nil {
			return err
		}
		cur.Kind, cur.BaseURL, cur.Repo, cur.TargetBranch = in.Kind, in.BaseURL, in.Repo, in.TargetBranch
		if in.Token != "" {
			cur.Token = in.Token
		}
		f = cur
		return tx.UpdateForge(ctx, cur)
	})
	return f, err
}

// RotateWebhookSecret gives forge name a new webhook secret and returns it, shown only
// now; deliveries signed with the old one are refused from then on.
func (s *Forges) RotateWebhookSecret(ctx context.Context, actor *Agent, name string) (string, error) {
	secret := NewForgeWebhookSecret()
	var f *Forge
	err := s.change(ctx, actor, "forge.webhook_secret_rotated", func() map[string]any { return forgeFacts(f) }, func(tx ForgeTx) error {
		cur, err := tx.GetForgeByName(ctx, name)
		if err != nil {
			return err
		}
		cur.WebhookSecret, f = secret, cur
		return tx.UpdateForge(ctx, cur)
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// Delete removes forge name. Agents that name it are refused (ECONFLICT) until they
// name another forge or none.
func (s *Forges) Delete(ctx context.Context, actor *Agent, name string) error {
	var f *Forge
	return s.change(ctx, actor, "forge.deleted", func() map[string]any { return forgeFacts(f) }, func(tx ForgeTx) error {
		cur, err := tx.GetForgeByName(ctx, name)
		if err != nil {
			return err
		}
		f = cur
		agents, err := tx.ListAgents(ctx)
		if err != nil {
			return err
		}
		var users []string
		for _, a := range agents {
			if a.Forge == cur.Name {
				users = append(users, a.Name)
			}
		}
		if len(users) > 0 {
			return Errorf(ECONFLICT, "forge %s is used by agents %s: point them elsewhere first", cur.Name, strings.Join(users, ", "))
		}
		return tx.DeleteForge(ctx, cur.ID)
	})
}

// MapUser makes login on forge name act as agent: a review by login is that agent's,
// under its roles and the separation of duties. An empty agent removes the mapping.
func (s *Forges) MapUser(ctx context.Context, actor *Agent, name, login, agent string) error {
	login = strings.TrimSpace(login)
	if login == "" || len(login) > 255 || strings.ContainsAny(login, " \t\r\n/") {
		return &Error{Code: EINVALID, Message: "a forge login is required", Fields: map[string]string{"login": "must be a forge user name"}}
	}
	data := map[string]any{"forge": name, "login": login, "agent": agent}
	return s.change(ctx, actor, "forge.user_mapped", func() map[string]any { return data }, func(tx ForgeTx) error {
		f, err := tx.GetForgeByName(ctx, name)
		if err != nil {
			return err
		}
		if agent == "" {
			return tx.DeleteForgeUser(ctx, f.ID, login)
		}
		a, err := tx.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(agent)))
		if err != nil {
			return err
		}
		return tx.PutForgeUser(ctx, &ForgeUser{ForgeID: f.ID, Login: login, AgentID: a.ID})
	})
}
