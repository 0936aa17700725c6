package models

import "context"

// AgentPasswordSet is the event type of a dashboard password set or reset: its data
// names the agent, who set it ("by") and whether it was the agent changing its own
// ("own"); never the password or its hash.
const AgentPasswordSet = "agent.password_set"

// NewPassword returns a random one-time password (20 URL-safe characters, over
// MinPasswordLength): the one the first start, the demo and `countersign agent
// password` print.
func NewPassword() string { return NewSecret("")[:20] }

// SetPassword sets the dashboard password of the human agent name. An admin (acting
// as itself, not through an attempt token) sets or resets anyone's; any other human
// changes only their own and must give their current password. A password must pass
// PasswordProblem (at least MinPasswordLength characters); a refusal is an EINVALID
// error naming "password" or "current_password". A reset also lifts a sign-in lockout
// of the account. Each set is an agent.password_set event.
func (s *AgentService) SetPassword(ctx context.Context, actor *Agent, name, current, password string) error {
	if err := actor.Unscoped("set a password"); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.GetAgentByName(ctx, name)
		if err != nil {
			return err
		}
		own := actor != nil && actor.ID != 0 && actor.ID == a.ID
		admin := actor.HasRole(RoleAdmin)
		switch {
		case !admin && !own:
			return Forbidden("admin_only", "only an admin sets another agent's password")
		case a.Kind != KindHuman:
			return &Error{Code: EINVALID, Message: "validation failed",
				Fields: map[string]string{"name": "only a human agent signs in with a password"}}
		case !admin && !a.CheckPassword(current):
			return &Error{Code: EINVALID, Message: "validation failed",
				Fields: map[string]string{"current_password": "does not match your current password"}}
		}
		if err := a.SetPassword(password); err != nil {
			return err
		}
		a.UpdatedAt = s.now()
		if err := tx.UpdateAgent(ctx, a); err != nil {
			return err
		}
		if err := tx.ClearLoginFailures(ctx, a.Name); err != nil {
			return err
		}
		return s.emitAbout(ctx, tx, AgentPasswordSet, actor, a.ID,
			map[string]any{"agent": a.Name, "by": actorName(actor), "own": own})
	})
}
