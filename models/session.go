package models

import (
	"context"
	"time"
)

// SessionCookie is the name of the dashboard's session cookie, read by the pages and
// by the WebSocket endpoint.
const SessionCookie = "cs_session"

// maxSecretLen bounds a session secret read from a cookie.
const maxSecretLen = 200

// CanSignIn reports whether a may use the dashboard: enabled humans only. Worker
// agents are run by the runner, and the runner's system identity is no person.
func (a *Agent) CanSignIn() bool {
	return a != nil && !a.Disabled && a.Kind == KindHuman
}

// ResolveSession returns the agent and session a session cookie's secret stands for,
// or EUNAUTHORIZED when there is none, it expired at now, or its agent may no longer
// sign in.
func ResolveSession(ctx context.Context, st Tx, secret string, now time.Time) (*Agent, *Session, error) {
	unauthorized := Errorf(EUNAUTHORIZED, "not signed in")
	if secret == "" || len(secret) > maxSecretLen {
		return nil, nil, unauthorized
	}
	s, err := st.GetSession(ctx, HashSecret(secret))
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil, unauthorized
	}
	if err != nil {
		return nil, nil, err
	}
	if !now.Before(s.ExpiresAt) {
		return nil, nil, unauthorized
	}
	a, err := st.GetAgent(ctx, s.AgentID)
	if ErrorCode(err) == ENOTFOUND || (err == nil && !a.CanSignIn()) {
		return nil, nil, unauthorized
	}
	if err != nil {
		return nil, nil, err
	}
	return a, s, nil
}
