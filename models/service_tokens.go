package models

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Token lifetimes.
const (
	// DefaultTokenTTL is how long a token lasts unless its issuer says otherwise.
	DefaultTokenTTL = 90 * 24 * time.Hour
	// NoExpiry, given as a token's lifetime, makes a token that never expires.
	NoExpiry time.Duration = -1
	// TokenTouchInterval bounds how often a token's last use is written: at most once
	// per interval, so that authenticating stays a read.
	TokenTouchInterval = time.Minute
	// maxTokenName bounds a token's label.
	maxTokenName = 100
)

// Token statuses, as Token.Status reports them.
const (
	TokenActive  = "active"
	TokenExpired = "expired"
	TokenRevoked = "revoked"
)

// Status says whether t is active, expired or revoked at now.
func (t *Token) Status(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return TokenRevoked
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return TokenExpired
	}
	return TokenActive
}

// ParseTokenTTL reads a token lifetime as the command line and forms give it: "" for
// DefaultTokenTTL, "never" for NoExpiry, a number of days ("30d") or a Go duration
// ("720h"). A lifetime must be positive.
func ParseTokenTTL(s string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	bad := &Error{Code: EINVALID, Message: "validation failed",
		Fields: map[string]string{"expires": "must be a number of days such as 30d, a duration such as 720h, or never"}}
	switch s {
	case "":
		return DefaultTokenTTL, nil
	case "never":
		return NoExpiry, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// CreateToken issues a bearer token for the named agent that expires after
// DefaultTokenTTL and returns the secret; see IssueToken.
func (s *TokenService) CreateToken(ctx context.Context, actor *Agent, agentName, name string) (string, error) {
	secret, _, err := s.IssueToken(ctx, actor, agentName, name, DefaultTokenTTL)
	return secret, err
}

// IssueToken issues a bearer token called name for the named agent, lasting ttl
// (NoExpiry: for good), and returns the secret, which is shown once — only its hash is
// stored — and the token. Only an admin may issue tokens.
func (s *TokenService) IssueToken(ctx context.Context, actor *Agent, agentName, name string, ttl time.Duration) (string, *Token, error) {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return "", nil, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = "token"
	}
	if len(name) > maxTokenName {
		return "", nil, &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"name": fmt.Sprintf("must be at most %d characters", maxTokenName)}}
	}
	if ttl <= 0 && ttl != NoExpiry {
		return "", nil, &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"expires": "must be positive, or never"}}
	}
	secret := NewSecret("cs_")
	now := s.now()
	t := &Token{Name: name, Hash: HashSecret(secret), CreatedAt: now}
	if ttl != NoExpiry {
		t.ExpiresAt = ptr(now.Add(ttl))
	}
	err := s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(agentName)))
		if err != nil {
			return err
		}
		if a.Kind == KindSystem {
			return Forbidden("runner_immutable", "the runner agent has no tokens")
		}
		t.AgentID = a.ID
		if err := tx.CreateToken(ctx, t); err != nil {
			return err
		}
		data := map[string]any{"agent": a.Name, "name": name, "token_id": t.ID, "by": actorName(actor)}
		if t.ExpiresAt != nil {
			data["expires_at"] = t.ExpiresAt
		}
		return s.emitAbout(ctx, tx, "token.created", actor, a.ID, data)
	})
	if err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Authenticate returns the agent a bearer token stands for, or EUNAUTHORIZED when the
// token is unknown, revoked or expired, or its agent is disabled. An attempt token's
// agent comes with its Scope set. The token's use is recorded at most once per
// TokenTouchInterval.
func (s *TokenService) Authenticate(ctx context.Context, secret string) (*Agent, error) {
	if secret == "" {
		return nil, Errorf(EUNAUTHORIZED, "missing bearer token")
	}
	if len(secret) > maxSecretLen {
		return nil, Errorf(EUNAUTHORIZED, "invalid bearer token")
	}
	t, a, err := s.store.TokenByHash(ctx, HashSecret(secret))
	if ErrorCode(err) == ENOTFOUND {
		return nil, Errorf(EUNAUTHORIZED, "invalid bearer token")
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case t.Status(now) == TokenRevoked:
		return nil, Errorf(EUNAUTHORIZED, "this bearer token was revoked")
	case t.Status(now) == TokenExpired:
		return nil, Errorf(EUNAUTHORIZED, "this bearer token expired at %s", t.ExpiresAt.UTC().Format(time.RFC3339))
	case a.Disabled || a.Kind == KindSystem:
		return nil, Errorf(EUNAUTHORIZED, "invalid bearer token")
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= TokenTouchInterval {
		if err := s.store.TouchToken(ctx, t.ID, now, now.Add(-TokenTouchInterval)); err != nil {
			return nil, err
		}
	}
	if t.TaskID != nil {
		a.Scope = &TokenScope{TokenID: t.ID, TaskID: *t.TaskID, Attempt: t.Attempt}
	}
	return a, nil
}

// mayManageTokens returns nil when actor may see and revoke the tokens of agent a: an
// admin, or the agent itself (not through an attempt token).
func mayManageTokens(actor, a *Agent) error {
	if err := actor.Unscoped("manage tokens"); err != nil {
		return err
	}
	if actor.HasRole(RoleAdmin) || (actor != nil && actor.ID != 0 && actor.ID == a.ID) {
		return nil
	}
	return Forbidden("admin_or_owner", "only an admin or the agent itself may see or revoke its tokens")
}

// ListTokens returns the tokens of the named agent, newest first (not the attempt
// tokens the runner issues). An admin or the agent itself may list them.
func (s *TokenService) ListTokens(ctx context.Context, actor *Agent, agentName string) ([]Token, error) {
	a, err := s.store.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(agentName)))
	if err != nil {
		return nil, err
	}
	if err := mayManageTokens(actor, a); err != nil {
		return nil, err
	}
	return s.store.ListTokens(ctx, a.ID)
}

// RevokeToken revokes token id at once: a request bearing it is refused from now on.
// An admin or the token's own agent may; revoking a revoked token changes nothing.
func (s *TokenService) RevokeToken(ctx context.Context, actor *Agent, id int64) (*Token, error) {
	var out *Token
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.GetToken(ctx, id)
		if err != nil {
			return err
		}
		a, err := tx.GetAgent(ctx, t.AgentID)
		if err != nil {
			return err
		}
		if err := mayManageTokens(actor, a); err != nil {
			return err
		}
		out = t
		revoked, err := tx.RevokeTokens(ctx, TokenFilter{ID: id}, s.now())
		if err != nil || len(revoked) == 0 {
			return err
		}
		out = &revoked[0]
		return s.emitRevoked(ctx, tx, actor, a, revoked)
	})
	return out, err
}

// RevokeTokensByName revokes every unrevoked token called tokenName of the named
// agent and returns them (none is not an error). An admin or the agent itself may.
func (s *TokenService) RevokeTokensByName(ctx context.Context, actor *Agent, agentName, tokenName string) ([]Token, error) {
	tokenName = strings.TrimSpace(tokenName)
	if tokenName == "" {
		return nil, &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"name": "is required"}}
	}
	var out []Token
	err := s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(agentName)))
		if err != nil {
			return err
		}
		if err := mayManageTokens(actor, a); err != nil {
			return err
		}
		out, err = tx.RevokeTokens(ctx, TokenFilter{AgentID: a.ID, Name: tokenName}, s.now())
		if err != nil || len(out) == 0 {
			return err
		}
		return s.emitRevoked(ctx, tx, actor, a, out)
	})
	return out, err
}

// emitRevoked records the revocation of ts, tokens of a, as one token.revoked event each.
func (s *TokenService) emitRevoked(ctx context.Context, tx Tx, actor, a *Agent, ts []Token) error {
	for _, t := range ts {
		data := map[string]any{"agent": a.Name, "name": t.Name, "token_id": t.ID, "by": actorName(actor)}
		if err := s.emitAbout(ctx, tx, "token.revoked", actor, a.ID, data); err != nil {
			return err
		}
	}
	return nil
}

// IssueAttemptToken issues the bearer token the runner hands a worker for attempt
// attemptNo of task taskID, run by agent agentID. The token acts as that agent within
// the task's scope only (see TokenScope) and expires after ttl — the attempt's timeout
// plus a margin, so that the tokens of a runner that crashed die too. The secret is
// returned once; only its hash is stored. It is the runner's call, not an agent's.
func (s *TokenService) IssueAttemptToken(ctx context.Context, agentID, taskID int64, attemptNo int, ttl time.Duration) (secret string, tokenID int64, err error) {
	err = s.store.InTx(ctx, func(tx Tx) error {
		if _, err := tx.GetTask(ctx, taskID); err != nil {
			return err
		}
		secret, tokenID, err = s.IssueAttemptTokenTx(ctx, tx, agentID, taskID, attemptNo, ttl)
		return err
	})
	if err != nil {
		return "", 0, err
	}
	return secret, tokenID, nil
}

// IssueAttemptTokenTx is IssueAttemptToken in the caller's transaction: the runner
// issues the token in the transaction that records the attempt's start, so it costs no
// transaction of its own. Any earlier attempt token of the task is revoked with it.
// The caller has read the task in tx (the runner holds it locked): a task that does not
// exist is the store's EINVALID (a reference to a missing row), not an ENOTFOUND.
func (s *TokenService) IssueAttemptTokenTx(ctx context.Context, tx Tx, agentID, taskID int64, attemptNo int, ttl time.Duration) (secret string, tokenID int64, err error) {
	if ttl <= 0 {
		return "", 0, Errorf(EINVALID, "an attempt token needs a positive lifetime, not %s", ttl)
	}
	if attemptNo < 1 {
		return "", 0, Errorf(EINVALID, "attempt numbers start at 1, not %d", attemptNo)
	}
	a, err := tx.GetAgent(ctx, agentID)
	if err != nil {
		return "", 0, err
	}
	if a.Kind == KindSystem || a.Disabled {
		return "", 0, Errorf(EINVALID, "agent %s cannot hold an attempt token", a.Name)
	}
	now := s.now()
	// One live attempt token per task: an earlier attempt's (a runner that died before
	// revoking it, its worker's escaped processes still holding it) dies now. A first
	// attempt has no earlier attempt, so no earlier token: the runner records an
	// attempt and issues its token in one transaction.
	if attemptNo > 1 {
		if err := tx.RevokeTaskAttemptTokens(ctx, taskID, now); err != nil {
			return "", 0, err
		}
	}
	secret = NewSecret("cs_")
	t := &Token{AgentID: a.ID, Name: fmt.Sprintf("attempt %d of task %d", attemptNo, taskID), Hash: HashSecret(secret),
		CreatedAt: now, ExpiresAt: ptr(now.Add(ttl)), TaskID: &taskID, Attempt: attemptNo}
	if err := tx.CreateToken(ctx, t); err != nil {
		return "", 0, err
	}
	return secret, t.ID, nil
}

// RevokeAttemptToken revokes the attempt token tokenID once its attempt is over;
// revoking it twice, or naming a token that is no attempt token, changes nothing.
func (s *TokenService) RevokeAttemptToken(ctx context.Context, tokenID int64) error {
	// One statement: the runner calls this once per attempt, on its hot path.
	return s.store.RevokeAttemptToken(ctx, tokenID, s.now())
}

// RevokeAttemptTokens revokes the attempt tokens tokenIDs in one statement, as
// RevokeAttemptToken would one by one: the runner gathers the tokens of attempts that
// end together.
func (s *TokenService) RevokeAttemptTokens(ctx context.Context, tokenIDs []int64) error {
	return s.store.RevokeAttemptTokens(ctx, tokenIDs, s.now())
}

// RevokeAttemptTokensForTask revokes every attempt token of task taskID — what a
// runner does when it takes over a task whose runner died — and returns how many were
// still live.
func (s *TokenService) RevokeAttemptTokensForTask(ctx context.Context, taskID int64) (int, error) {
	if taskID <= 0 {
		return 0, Errorf(EINVALID, "no task %d", taskID)
	}
	ts, err := s.store.RevokeTokens(ctx, TokenFilter{TaskID: taskID}, s.now())
	return len(ts), err
}

// PruneAttemptTokens deletes the attempt tokens that expired more than a day ago,
// revoked or not: they can never be used again and are only clutter. It returns how
// many went.
func (s *TokenService) PruneAttemptTokens(ctx context.Context) (int64, error) {
	return s.store.DeleteAttemptTokens(ctx, s.now().Add(-24*time.Hour))
}

// actorName names an actor in event data: the agent's name, "system" for the
// operator's command line.
func actorName(a *Agent) string {
	if a == nil {
		return ""
	}
	return a.Name
}

// emitAbout appends an event about agent agentID (Event.AgentID), for its history.
func (s *core) emitAbout(ctx context.Context, tx Tx, typ string, actor *Agent, agentID int64, data any) error {
	e, err := s.event(typ, actor, nil, nil, data)
	if err != nil {
		return err
	}
	e.AgentID = &agentID
	return tx.AppendEvent(ctx, e)
}
