package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// AdvisoryArgs are the arguments of resolve_advisory.
type AdvisoryArgs struct {
	AgentName string          `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token (a lead or exec)"`
	TaskID    int64           `json:"task_id" jsonschema:"the advisory task waiting in the inbox (kind advisory_prompt)"`
	Action    string          `json:"action" jsonschema:"proceed (delegate it as advisory: a person reviews its output), make_verifiable (replace its verification with the criteria given) or cancel"`
	Criteria  []CriterionArgs `json:"criteria,omitempty" jsonschema:"make_verifiable only: the verifiable contract's criteria; none: generated from the task's words and its workspace, as at creation"`
	Reason    string          `json:"reason,omitempty" jsonschema:"optional note kept with the resolution (at most 2000 characters)"`
}

// CriterionArgs is one criterion of a verifiable contract, named by activity.
type CriterionArgs struct {
	Activity    string `json:"activity" jsonschema:"the activity that checks it, e.g. unit-test, lint, typecheck, e2e; the project rules give its command"`
	Description string `json:"description" jsonschema:"what must hold, in words"`
	Timing      string `json:"timing,omitempty" jsonschema:"immediate (default) or deferred"`
	Command     string `json:"command,omitempty" jsonschema:"optional shell command; only an admin, editor or lead may set one (commands_need_editor)"`
}

// registerAdvisory registers resolve_advisory, the MCP face of the advisory prompt
// (models.ResolveAdvisoryPrompt).
func (t *tools) registerAdvisory(srv *sdk.Server) {
	add(t, srv, &sdk.Tool{Name: "resolve_advisory",
		Description: "As a lead or exec, answer the advisory prompt of a task waiting undelegated in the inbox (kind advisory_prompt: an advisory task, one with no automated verification, held because prompt_for_advisory is on, its classification was ambiguous, or it is a step of a multi-step run). action proceed delegates it as advisory; make_verifiable replaces its verification with the given criteria (validated as at creation) and delegates it; cancel cancels it. Refusals name their rule: lead_or_exec, advisory_prompt (no prompt waiting), commands_need_editor."},
		refusalStyle{about: aboutTask}, func(ctx context.Context, a *models.Agent, in AdvisoryArgs) (TaskView, string, error) {
			if err := claim(a, "agent_name", in.AgentName); err != nil {
				return TaskView{}, "", err
			}
			d := models.AdvisoryDecision{Action: in.Action, Reason: in.Reason}
			for _, c := range in.Criteria {
				d.Criteria = append(d.Criteria, contract.Criterion{Activity: c.Activity, Description: c.Description, Timing: c.Timing, Command: c.Command})
			}
			task, err := t.svc.Tasks.ResolveAdvisoryPrompt(ctx, a, in.TaskID, d)
			if err != nil {
				return TaskView{}, "", err
			}
			return newNamer(ctx, t.svc).task(task), fmt.Sprintf("task %d: %s; it is %s, verification %s", task.ID, in.Action, task.State, task.Contract.Verification.Type), nil
		})
}
