package models

import "context"

// Stages of the separation-of-duties rules: approving in review (also used for a
// review rejection) and verifying (also used for a verification rejection).
const (
	DutyApprove = "approve"
	DutyVerify  = "verify"
)

// mayAct decides whether actor may approve or verify task t, loading what Permitted
// needs: the builder and, for agents, the team size.
func mayAct(ctx context.Context, tx Tx, actor *Agent, t *Task, stage string) error {
	var builder *Agent
	if t.BuilderID != nil {
		b, err := tx.GetAgent(ctx, *t.BuilderID)
		if err != nil {
			return err
		}
		builder = b
	}
	team := 0
	if !actor.IsRunner() {
		n, err := teamSize(ctx, tx)
		if err != nil {
			return err
		}
		team = n
	}
	return Permitted(actor, t, stage, builder, team)
}

// Permitted decides, from what is known, whether actor may take stage ("approve" or
// "verify") on task t built by builder (nil: not started), in a team of team agents.
// It applies the step's policy (t.Approve or t.Verify), then separation of duties:
//
//   - verifier ≠ builder, always;
//   - with three or more agents in the team: builder, approver and verifier are three
//     different agents (so also approver ≠ builder and verifier ≠ approver);
//   - with fewer (a solo builder and a lead), only verifier ≠ builder holds.
//
// The runner is a party distinct from every agent, so it never conflicts with one; it
// acts only under the runner policy, and only on work it ran itself (a worker's). For
// work a person did, the runner policy falls back to "any eligible agent". The service
// enforces this where the state changes; the dashboard calls it to decide which
// buttons to show.
func Permitted(actor *Agent, t *Task, stage string, builder *Agent, team int) error {
	policy := t.Approve
	if stage == DutyVerify {
		policy = t.Verify
	}
	if err := policyAllows(actor, policy, stage, builder != nil && builder.Kind == KindWorker); err != nil {
		return err
	}
	if actor.IsRunner() {
		return nil
	}
	isBuilder := t.BuilderID != nil && *t.BuilderID == actor.ID
	if stage == DutyVerify && isBuilder {
		return Forbidden("verifier_not_builder", "the builder of a task cannot verify it")
	}
	if team < 3 {
		return nil
	}
	if stage == DutyApprove && isBuilder {
		return Forbidden("approver_not_builder", "the builder of a task cannot approve it (builder, approver and verifier must differ)")
	}
	if stage == DutyVerify && t.ApproverID != nil && *t.ApproverID == actor.ID {
		return Forbidden("verifier_not_approver", "the approver of a task cannot also verify it (builder, approver and verifier must differ)")
	}
	return nil
}

// policyAllows checks the step's approve or verify policy.
func policyAllows(actor *Agent, policy Policy, stage string, workerBuilt bool) error {
	switch {
	case policy == "" || policy == PolicyRunner:
		if workerBuilt && !actor.IsRunner() {
			return Forbidden("runner_policy", "%s", "this task's "+stage+" step belongs to the runner, which checks the worker's output against the contract")
		}
		if !workerBuilt && actor.IsRunner() {
			return Forbidden("runner_policy", "%s", "the runner only "+stage+"s work it ran itself")
		}
	case actor.IsRunner():
		return Forbidden("runner_policy", "%s", "this task's "+stage+" step belongs to a person ("+policy+")")
	case policy == PolicyAny:
	default:
		if !actor.HasRole(policy) {
			return Forbidden("role_required", "%s", "this task's "+stage+" step needs the role "+quote(policy))
		}
	}
	return nil
}

// TeamSize counts the agents of a list who take part in separation of duties:
// enabled, and not the runner.
func TeamSize(agents []Agent) int {
	n := 0
	for _, a := range agents {
		if !a.Disabled && a.Kind != KindSystem {
			n++
		}
	}
	return n
}

// teamSize counts the team in tx.
func teamSize(ctx context.Context, tx Tx) (int, error) {
	agents, err := tx.ListAgents(ctx)
	if err != nil {
		return 0, err
	}
	return TeamSize(agents), nil
}
