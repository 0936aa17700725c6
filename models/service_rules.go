package models

import "context"

// mayAct decides whether actor may approve (stage "approve", also used for a review
// rejection) or verify (stage "verify", also used for a verification rejection) task t
// under policy, applying separation of duties:
//
//   - verifier ≠ builder, always;
//   - with three or more agents in the team: builder, approver and verifier are three
//     different agents (so also approver ≠ builder and verifier ≠ approver);
//   - with fewer (a solo builder and a lead), only verifier ≠ builder holds.
//
// The runner is a party distinct from every agent, so it never conflicts with one; it
// acts only under the runner policy, and only on work it ran itself (a worker's). For
// work a person did, the runner policy falls back to "any eligible agent".
func (s *Service) mayAct(ctx context.Context, tx Tx, actor *Agent, t *Task, policy Policy, stage string) error {
	if err := s.policyAllows(ctx, tx, actor, t, policy, stage); err != nil {
		return err
	}
	if actor.IsRunner() {
		return nil
	}
	isBuilder := t.BuilderID != nil && *t.BuilderID == actor.ID
	if stage == "verify" && isBuilder {
		return Forbidden("verifier_not_builder", "the builder of a task cannot verify it")
	}
	team, err := teamSize(ctx, tx)
	if err != nil {
		return err
	}
	if team < 3 {
		return nil
	}
	if stage == "approve" && isBuilder {
		return Forbidden("approver_not_builder", "the builder of a task cannot approve it (builder, approver and verifier must differ)")
	}
	if stage == "verify" && t.ApproverID != nil && *t.ApproverID == actor.ID {
		return Forbidden("verifier_not_approver", "the approver of a task cannot also verify it (builder, approver and verifier must differ)")
	}
	return nil
}

// policyAllows checks the step's approve or verify policy.
func (s *Service) policyAllows(ctx context.Context, tx Tx, actor *Agent, t *Task, policy Policy, stage string) error {
	workerBuilt := false
	if t.BuilderID != nil {
		b, err := tx.GetAgent(ctx, *t.BuilderID)
		if err != nil {
			return err
		}
		workerBuilt = b.Kind == KindWorker
	}
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
