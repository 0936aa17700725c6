package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// ToolNames lists the tools the server offers, in the order they are registered.
// None of them posts a completion: completion belongs to the runner.
var ToolNames = []string{
	"create_goal", "link_task_to_goal", "goal_status", "verify_task", "reject_verification", "verify_goal", "reject_goal",
	"create_task", "update_task", "submit_for_review", "approve_task", "reject_task", "ask_question", "answer_question", "amend_task", "reopen_task", "inbox_list",
	"resolve_advisory",
}

// scopedTools are the only tools an attempt token may use (see models.TokenScope):
// they act on one task, which the service checks is within the token's scope.
var scopedTools = map[string]bool{"create_task": true, "update_task": true, "submit_for_review": true, "ask_question": true}

// tools holds what the tool handlers need.
type tools struct {
	svc services
	log *slog.Logger
}

// call is a tool's work once the actor is known: its structured answer, a one-line
// summary, or the service's error.
type call[In, Out any] func(ctx context.Context, actor *models.Agent, in In) (Out, string, error)

// how a tool reports a refusal.
type refusalStyle struct {
	about   subject
	renames map[string]string // service field name → tool argument name
}

// add registers a tool whose handler runs as the request's authenticated agent and
// answers with structured content plus a short text (and the same JSON as text, for
// clients that only read text), or with a tool error naming the rule.
func add[In, Out any](t *tools, srv *sdk.Server, tool *sdk.Tool, style refusalStyle, f call[In, Out]) {
	sdk.AddTool(srv, tool, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		var zero Out
		actor, err := actorOf(req)
		if err == nil && !scopedTools[tool.Name] {
			err = actor.Unscoped("use the tool " + tool.Name)
		}
		if err != nil {
			return nil, zero, t.refusal(tool.Name, err, style.about, style.renames)
		}
		out, text, err := f(ctx, actor, in)
		if err != nil {
			return nil, zero, t.refusal(tool.Name, err, style.about, style.renames)
		}
		j, err := json.Marshal(out)
		if err != nil {
			return nil, zero, t.refusal(tool.Name, err, style.about, nil)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}, &sdk.TextContent{Text: string(j)}}}, out, nil
	})
}

// Tool arguments. Identity arguments (creator, agent_name) are optional: the actor is
// always the token's agent, and a different name is refused.

// CreateGoalArgs are the arguments of create_goal.
type CreateGoalArgs struct {
	Creator     string `json:"creator,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	Title       string `json:"title" jsonschema:"what the goal delivers, e.g. Build login page (at most 200 characters)"`
	Description string `json:"description,omitempty" jsonschema:"the outcome in more detail: what the lead will test before verifying the goal"`
	Project     string `json:"project,omitempty" jsonschema:"optional project name to group goals"`
}

// LinkArgs are the arguments of link_task_to_goal.
type LinkArgs struct {
	TaskID int64 `json:"task_id" jsonschema:"the task to move into the goal"`
	GoalID int64 `json:"goal_id" jsonschema:"the goal to move it into (not a verified goal)"`
}

// GoalArgs are the arguments of goal_status.
type GoalArgs struct {
	GoalID int64 `json:"goal_id" jsonschema:"the goal id returned by create_goal"`
}

// VerifyTaskArgs are the arguments of verify_task.
type VerifyTaskArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"a task in state completed"`
	Notes     string `json:"notes,omitempty" jsonschema:"what you checked and how: files read, commands run, behaviour tested"`
}

// ReasonArgs are the arguments of the tools that send work back with a reason.
type ReasonArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"the task"`
	Reason    string `json:"reason" jsonschema:"required, non-empty: precisely what is wrong and what must change; the builder gets it with the task"`
}

// AskArgs are the arguments of ask_question.
type AskArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"the task you are doing"`
	Question  string `json:"question" jsonschema:"required, non-empty: the question, with what you need to know and why"`
}

// AnswerArgs are the arguments of answer_question.
type AnswerArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"the waiting task, or the task blocked on an impossible claim"`
	Answer    string `json:"answer" jsonschema:"required, non-empty: the answer the worker gets in its next brief"`
}

// AmendArgs are the arguments of amend_task.
type AmendArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"the blocked task"`
	Brief     string `json:"brief" jsonschema:"required: the task's whole new brief, which replaces the old one"`
	Reason    string `json:"reason,omitempty" jsonschema:"optional: guidance for the worker with the new brief"`
}

// VerifyGoalArgs are the arguments of verify_goal.
type VerifyGoalArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token (a lead)"`
	GoalID    int64  `json:"goal_id" jsonschema:"a goal in state pending_verify"`
	Notes     string `json:"notes" jsonschema:"required, non-empty: the integration test you ran on the whole result and what you saw"`
}

// TaskFields describe a new task: the arguments create_task takes and each fix task
// of reject_goal, so that both create tasks from the same fields with the same rules.
type TaskFields struct {
	Title     string  `json:"title" jsonschema:"the unit of work, e.g. Create login form component (at most 200 characters)"`
	Brief     string  `json:"brief,omitempty" jsonschema:"what to do and the acceptance criteria; the completion contract is generated from it and fixed now"`
	Role      string  `json:"role,omitempty" jsonschema:"the role the work needs, e.g. developer (the default), tester, reviewer"`
	Assignee  string  `json:"assignee,omitempty" jsonschema:"agent to assign it to: yourself, or anyone if you are a lead or exec; leave out to leave it pending for the runner or a later assignment"`
	AssignTo  string  `json:"assign_to,omitempty" jsonschema:"alias of assignee (the JSON API's name), kept for older clients; give one of the two"`
	Approve   string  `json:"approve,omitempty" jsonschema:"who approves in review: runner (default; for work a person does, any eligible agent), any, or a role such as lead"`
	Verify    string  `json:"verify,omitempty" jsonschema:"who verifies: runner (default; for work a person does, any eligible agent), any, or a role such as tester"`
	DependsOn []int64 `json:"depends_on,omitempty" jsonschema:"ids of tasks that must be verified before this one can start"`
}

// spec is the service's task specification for these fields (no goal: the caller
// sets it). field names the fields in a refusal ("" for create_task's own, or
// "fix_tasks[1]."): assignee and its alias assign_to naming two agents is EINVALID.
func (f TaskFields) spec(field string) (models.TaskSpec, error) {
	assignee := f.Assignee
	if assignee == "" {
		assignee = f.AssignTo
	} else if f.AssignTo != "" && !strings.EqualFold(strings.TrimSpace(f.AssignTo), strings.TrimSpace(assignee)) {
		return models.TaskSpec{}, &models.Error{Code: models.EINVALID, Message: "validation failed",
			Fields: map[string]string{field + "assign_to": "is an alias of assignee and names another agent; give one of the two"}}
	}
	return models.TaskSpec{Title: f.Title, Brief: f.Brief, Role: f.Role, Approve: f.Approve, Verify: f.Verify,
		DependsOn: f.DependsOn, Assignee: assignee}, nil
}

// CreateTaskArgs are the arguments of create_task: the task's fields, who creates it
// and the goal it joins.
type CreateTaskArgs struct {
	Creator string `json:"creator,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskFields
	GoalID int64 `json:"goal_id,omitempty" jsonschema:"goal to put the task in (a goal waiting for verification goes back to active; to send it back with a recorded reason, use reject_goal)"`
	// SpawnedBy makes the new task a minion task of another (see models.Task.SpawnedBy).
	SpawnedBy int64 `json:"spawned_by,omitempty" jsonschema:"optional: the id of the task whose agent (the pilot) spawns this one as a minion task; the pilot may submit it for review but never verify it (pilot_not_verifier). Created with an attempt token it is set to the token's task"`
	// Contract is an object rather than models.Contract: its durations and commands
	// have their own JSON forms, which a schema inferred from the Go type would refuse.
	Contract map[string]any `json:"contract,omitempty" jsonschema:"optional: the contract as the JSON API takes it ({completion, verification, review}); left out, it is generated from the title and brief. Shell commands, held-out tests (verification.held_out: [{path, content}], test files the worker never sees, added before the checks run), verification.tests_may_change and verification.dependencies_may_change (the worker may change the dependencies; the judge installs them) need an admin, editor or lead (rule commands_need_editor)"`
}

// contract decodes the contract argument as the JSON API decodes a task's contract:
// unknown fields are errors naming the field.
func (a CreateTaskArgs) contract() (contract.Contract, error) {
	var c contract.Contract
	if a.Contract == nil {
		return c, nil
	}
	raw, err := json.Marshal(a.Contract)
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var de *models.Error
		if errors.As(err, &de) {
			return c, de
		}
		return c, &models.Error{Code: models.EINVALID, Message: "validation failed",
			Fields: map[string]string{"contract": strings.TrimPrefix(err.Error(), "json: ")}}
	}
	return c, nil
}

// RejectGoalArgs are the arguments of reject_goal.
type RejectGoalArgs struct {
	AgentName string       `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token (a lead)"`
	GoalID    int64        `json:"goal_id" jsonschema:"a goal in state pending_verify"`
	Reason    string       `json:"reason" jsonschema:"required, non-empty: what the integration test showed is wrong; recorded in the goal's history (event goal.rejected)"`
	FixTasks  []TaskFields `json:"fix_tasks" jsonschema:"required, at least one: the tasks that fix it, created in the goal; each takes create_task's fields (title required; brief, role, assignee (alias assign_to), approve, verify, depends_on). Put what each must fix in its brief: the builder reads the task, not the goal's reason"`
}

// UpdateTaskArgs are the arguments of update_task.
type UpdateTaskArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"the task"`
	Status    string `json:"status" jsonschema:"in_progress (start an assigned task: the assignee only), review (submit without a summary; prefer submit_for_review) or cancelled (creator, lead or exec). completed and verified are refused: approve_task and verify_task do that, and worker completions belong to the runner"`
}

// SubmitArgs are the arguments of submit_for_review.
type SubmitArgs struct {
	AgentName    string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token (the builder)"`
	TaskID       int64  `json:"task_id" jsonschema:"a task in state in_progress that you are building"`
	Summary      string `json:"summary,omitempty" jsonschema:"what you built and how to check it"`
	FilesChanged string `json:"files_changed,omitempty" jsonschema:"the files you changed, e.g. login.js, login.css"`
}

// TaskArgs are the arguments of approve_task.
type TaskArgs struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"optional: your agent name; must be the agent owning your token"`
	TaskID    int64  `json:"task_id" jsonschema:"a task in state review"`
}

// InboxArgs are the arguments of inbox_list.
type InboxArgs struct {
	Kind            string `json:"kind,omitempty" jsonschema:"blocked (attempts exhausted), escalation (rejected twice by verifiers) or advisory; leave out for all"`
	IncludeResolved bool   `json:"include_resolved,omitempty" jsonschema:"also list items already resolved"`
	Limit           int    `json:"limit,omitempty" jsonschema:"at most this many items (default 100, at most 1000)"`
}

func (t *tools) register(srv *sdk.Server) {
	t.registerGoals(srv)
	t.registerVerification(srv)
	t.registerTasks(srv)
	t.registerQuestions(srv)
	t.registerAdvisory(srv)
}

// Each tool refuses in the words of what it acts on, and the reading tools say
// they change nothing so a client may call them freely.
var (
	onTask   = refusalStyle{about: aboutTask}
	onGoal   = refusalStyle{about: aboutGoal}
	readOnly = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
)

// registerGoals adds the tools that create, fill and show goals.
func (t *tools) registerGoals(srv *sdk.Server) {
	svc := t.svc

	add(t, srv, &sdk.Tool{Name: "create_goal",
		Description: "Create a goal: a flat container for the tasks of one deliverable outcome. It starts open, becomes active when a task starts, pending_verify when all its tasks are verified, and verified when a lead confirms the integrated result. Returns the goal; its id is the goal_id of the other tools."},
		onGoal, func(ctx context.Context, a *models.Agent, in CreateGoalArgs) (GoalView, string, error) {
			if err := claim(a, "creator", in.Creator); err != nil {
				return GoalView{}, "", err
			}
			g := &models.Goal{Title: in.Title, Description: in.Description, Project: in.Project}
			if err := svc.Goals.CreateGoal(ctx, a, g); err != nil {
				return GoalView{}, "", err
			}
			return newNamer(ctx, svc).goal(g), fmt.Sprintf("goal %d created (%s): %s", g.ID, g.State, g.Title), nil
		})

	add(t, srv, &sdk.Tool{Name: "link_task_to_goal",
		Description: "Move an existing task into a goal (out of its previous goal, if any). The task's creator, a lead or an exec may do it. Linking an unfinished task into a goal that waits for verification sends the goal back to active."},
		onTask, func(ctx context.Context, a *models.Agent, in LinkArgs) (TaskView, string, error) {
			task, err := svc.Goals.LinkTaskToGoal(ctx, a, in.TaskID, in.GoalID)
			if err != nil {
				return TaskView{}, "", err
			}
			return newNamer(ctx, svc).task(task), fmt.Sprintf("task %d linked to goal %d", task.ID, in.GoalID), nil
		})

	add(t, srv, &sdk.Tool{Name: "goal_status", Annotations: readOnly,
		Description: "Show a goal: its state, the number of tasks in every task state (pending, assigned, in_progress, review, completed, verified, blocked, cancelled), each task with its id, title, state, role and assignee, and what the goal waits for."},
		onGoal, func(ctx context.Context, a *models.Agent, in GoalArgs) (GoalStatusView, string, error) {
			st, err := svc.Goals.GoalStatus(ctx, in.GoalID)
			if err != nil {
				return GoalStatusView{}, "", err
			}
			v := newNamer(ctx, svc).status(st)
			return v, fmt.Sprintf("goal %d is %s: %d of %d tasks verified", v.Goal.ID, v.Goal.State, v.Counts[string(models.TaskVerified)], v.Total), nil
		})
}

// registerVerification adds the tools of verifying tasks and goals: the verifier's and
// the lead's.
func (t *tools) registerVerification(srv *sdk.Server) {
	svc := t.svc

	add(t, srv, &sdk.Tool{Name: "verify_task",
		Description: "As an independent verifier, confirm a completed task after checking the work yourself (read the files changed, run the code, test the behaviour). The task moves to verified. Refused when you built it (verifier_not_builder) or, with three or more agents, approved it (verifier_not_approver), when you pilot it (you are on the task that spawned it: pilot_not_verifier), when you wore a hat on it that conflicts with the tester hat every verifier wears (hat_conflict: by default, you built it at any time), or when the task's verify policy needs a role you lack."},
		onTask, func(ctx context.Context, a *models.Agent, in VerifyTaskArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActVerify, models.ActionInput{Notes: in.Notes})
		})

	add(t, srv, &sdk.Tool{Name: "reject_verification",
		Description: "As the verifier, reject a completed task that does not work: it goes back to in_progress with its builder, and your reason becomes part of the next round. A non-empty reason is required. The second verifier rejection of a task escalates it to the lead's inbox. Same separation of duties as verify_task."},
		onTask, func(ctx context.Context, a *models.Agent, in ReasonArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActRejectVerification, models.ActionInput{Reason: in.Reason})
		})

	add(t, srv, &sdk.Tool{Name: "verify_goal",
		Description: "As the lead, confirm a goal after testing the integrated product end to end, not just checking that its tasks are verified. Only a lead may (lead_only) and it cannot be delegated; the goal must be pending_verify (every task verified or cancelled) and notes are required. The goal moves to verified."},
		onGoal, func(ctx context.Context, a *models.Agent, in VerifyGoalArgs) (GoalView, string, error) {
			if err := claim(a, "agent_name", in.AgentName); err != nil {
				return GoalView{}, "", err
			}
			g, err := svc.Goals.VerifyGoal(ctx, a, in.GoalID, in.Notes)
			if err != nil {
				return GoalView{}, "", err
			}
			return newNamer(ctx, svc).goal(g), fmt.Sprintf("goal %d verified by %s", g.ID, a.Name), nil
		})

	// The service names a fix task's assignee and dependencies without saying which fix
	// task (they are checked inside the transaction); the field says they are a fix task's.
	add(t, srv, &sdk.Tool{Name: "reject_goal",
		Description: "As the lead, send a goal waiting for verification (pending_verify) back to active when your integration test fails: the reason is recorded in the goal's history (event goal.rejected) and the fix tasks are created in the goal, all in one step or not at all. Only a lead may (lead_only); a non-empty reason and at least one fix task (with create_task's fields) are required. Tasks already verified stay verified; the goal waits for verification again once the fix tasks are verified. Returns the goal's status, as goal_status does."},
		refusalStyle{about: aboutGoal, renames: map[string]string{"agent": "fix_tasks[].assignee", "depends_on": "fix_tasks[].depends_on"}},
		func(ctx context.Context, a *models.Agent, in RejectGoalArgs) (GoalStatusView, string, error) {
			if err := claim(a, "agent_name", in.AgentName); err != nil {
				return GoalStatusView{}, "", err
			}
			specs := make([]models.TaskSpec, len(in.FixTasks))
			for i, f := range in.FixTasks {
				spec, err := f.spec(fmt.Sprintf("fix_tasks[%d].", i+1))
				if err != nil {
					return GoalStatusView{}, "", err
				}
				specs[i] = spec
			}
			st, err := svc.Goals.RejectGoal(ctx, a, in.GoalID, in.Reason, specs)
			if err != nil {
				return GoalStatusView{}, "", err
			}
			v := newNamer(ctx, svc).status(st)
			return v, fmt.Sprintf("goal %d sent back to %s by %s with %d fix tasks: %d of %d tasks verified",
				v.Goal.ID, v.Goal.State, a.Name, len(specs), v.Counts[string(models.TaskVerified)], v.Total), nil
		})
}

// registerTasks adds the tools that create a task and move it through its work and
// review.
func (t *tools) registerTasks(srv *sdk.Server) {
	svc := t.svc

	add(t, srv, &sdk.Tool{Name: "create_task",
		Description: "Create a task: one unit of work with a role and a brief. Its completion contract is given (contract) or generated from the title and brief, and fixed now, before the work is handed out. With assignee (alias assign_to) it starts assigned (a lead or exec may assign anyone; anyone may assign themself); without, it waits pending. With goal_id it joins that goal; a goal waiting for verification goes back to active (to record why, a lead uses reject_goal instead)."},
		refusalStyle{about: aboutTask, renames: map[string]string{"agent": "assignee"}},
		func(ctx context.Context, a *models.Agent, in CreateTaskArgs) (TaskView, string, error) {
			if err := claim(a, "creator", in.Creator); err != nil {
				return TaskView{}, "", err
			}
			spec, err := in.spec("")
			if err != nil {
				return TaskView{}, "", err
			}
			if in.GoalID != 0 {
				spec.GoalID = &in.GoalID
			}
			if in.SpawnedBy != 0 {
				spec.SpawnedBy = &in.SpawnedBy
			}
			ct, err := in.contract()
			if err != nil {
				return TaskView{}, "", err
			}
			spec.Contract = ct
			task, err := svc.Tasks.CreateTask(ctx, a, spec)
			if err != nil {
				return TaskView{}, "", err
			}
			v := newNamer(ctx, svc).task(task)
			return v, fmt.Sprintf("task %d created (%s): %s", task.ID, task.State, task.Title), nil
		})

	add(t, srv, &sdk.Tool{Name: "update_task",
		Description: "Change a task's status: in_progress starts an assigned task (the assignee only; its dependencies must be verified), review submits it without a summary (prefer submit_for_review), cancelled cancels it (its creator, a lead or an exec). completed and verified are refused: a reviewer approves with approve_task, an independent verifier verifies with verify_task, and a worker's completion belongs to the runner, which checks the output against the contract."},
		onTask, func(ctx context.Context, a *models.Agent, in UpdateTaskArgs) (TaskView, string, error) {
			act, err := statusAction(in.Status)
			if err != nil {
				return TaskView{}, "", err
			}
			return t.act(ctx, a, in.AgentName, in.TaskID, act, models.ActionInput{})
		})

	add(t, srv, &sdk.Tool{Name: "submit_for_review",
		Description: "As the builder, submit your in-progress task for review with a summary of what you built and the files you changed; it moves to review. Only the agent who started the task may submit it, or the pilot of a minion task (the agent on the task named by its spawned_by), who hands in the minion's output but never verifies it."},
		onTask, func(ctx context.Context, a *models.Agent, in SubmitArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActSubmit, models.ActionInput{Summary: in.Summary, FilesChanged: in.FilesChanged})
		})

	add(t, srv, &sdk.Tool{Name: "approve_task",
		Description: "As the reviewer, approve a task in review; it moves to completed and waits for an independent verifier. Refused when the task's approve policy needs a role you lack, or, with three or more agents, when you built it (approver_not_builder), when you submitted it as its pilot (approver_not_submitter), or when a hat you wore on it conflicts with the reviewer hat (hat_conflict)."},
		onTask, func(ctx context.Context, a *models.Agent, in TaskArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActApprove, models.ActionInput{})
		})

	add(t, srv, &sdk.Tool{Name: "reject_task",
		Description: "As the reviewer, reject a task in review: it goes back to in_progress with its builder, and your reason becomes part of the next round. A non-empty reason is required; the same rules as approve_task apply."},
		onTask, func(ctx context.Context, a *models.Agent, in ReasonArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActReject, models.ActionInput{Reason: in.Reason})
		})
}

// registerQuestions adds the tools of questions, reopening and the inbox: what waits
// for a person.
func (t *tools) registerQuestions(srv *sdk.Server) {
	svc := t.svc

	add(t, srv, &sdk.Tool{Name: "ask_question",
		Description: "As the worker doing a task, ask a person a question you cannot answer from the brief (a missing decision, contradictory requirements, an access you lack). When your run ends the task waits for the answer without using an attempt; the answer comes back in your next brief. Ask one question at a time, then stop working and exit."},
		onTask, func(ctx context.Context, a *models.Agent, in AskArgs) (TaskView, string, error) {
			if err := claim(a, "agent_name", in.AgentName); err != nil {
				return TaskView{}, "", err
			}
			task, err := svc.Tasks.AskQuestion(ctx, a, in.TaskID, in.Question)
			if err != nil {
				return TaskView{}, "", err
			}
			return newNamer(ctx, svc).task(task), fmt.Sprintf("question recorded on task %d: end your run now; the task waits for the answer", task.ID), nil
		})

	add(t, srv, &sdk.Tool{Name: "answer_question",
		Description: "As a lead, an exec or the task's creator, answer the question a waiting task asks, or the reason a blocked task's worker gave for saying it cannot be done as specified (stage impossible): it goes back to its worker with the question or reason and your answer in the next brief, no attempt used. A non-empty answer is required."},
		onTask, func(ctx context.Context, a *models.Agent, in AnswerArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActAnswer, models.ActionInput{Answer: in.Answer})
		})

	add(t, srv, &sdk.Tool{Name: "amend_task",
		Description: "As a lead, an exec or the task's creator, replace a blocked task's brief (for example one whose worker said it cannot be done as specified) and send it back to its assignee with a full attempt budget. The new brief must be non-empty and differ from the old one."},
		onTask, func(ctx context.Context, a *models.Agent, in AmendArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActAmend, models.ActionInput{Brief: in.Brief, Reason: in.Reason})
		})

	add(t, srv, &sdk.Tool{Name: "reopen_task",
		Description: "As the lead, reopen a verified task that regressed: it goes back to in_progress with its original builder, its verification is invalidated, and a verified goal containing it becomes active again. Lead only (lead_only); a non-empty reason is required."},
		onTask, func(ctx context.Context, a *models.Agent, in ReasonArgs) (TaskView, string, error) {
			return t.act(ctx, a, in.AgentName, in.TaskID, models.ActReopen, models.ActionInput{Reason: in.Reason})
		})

	add(t, srv, &sdk.Tool{Name: "inbox_list", Annotations: readOnly,
		Description: "List what waits for a person: blocked tasks (attempts exhausted, with every attempt's failure), escalations (a task rejected twice by verifiers) and advisory outputs to look at. Open items only unless include_resolved is set."},
		onTask, func(ctx context.Context, a *models.Agent, in InboxArgs) (InboxListView, string, error) {
			var fe models.FieldErrors
			if in.Kind != "" && !slices.Contains(models.InboxKinds, in.Kind) {
				fe.Add("kind", "must be one of "+strings.Join(models.InboxKinds, ", "))
			}
			if in.Limit < 0 || in.Limit > 1000 {
				fe.Add("limit", "must be between 1 and 1000")
			}
			if err := fe.Err(); err != nil {
				return InboxListView{}, "", err
			}
			items, err := svc.Store().ListInbox(ctx, models.InboxFilter{Kind: in.Kind, IncludeResolved: in.IncludeResolved, Limit: in.Limit})
			if err != nil {
				return InboxListView{}, "", err
			}
			out := InboxListView{Items: make([]InboxView, 0, len(items))}
			for i := range items {
				out.Items = append(out.Items, inboxView(&items[i]))
			}
			return out, fmt.Sprintf("%d inbox items", len(out.Items)), nil
		})
}

// act applies a task action as actor after checking the identity argument.
func (t *tools) act(ctx context.Context, actor *models.Agent, agentName string, id int64, act models.Action, in models.ActionInput) (TaskView, string, error) {
	if err := claim(actor, "agent_name", agentName); err != nil {
		return TaskView{}, "", err
	}
	task, err := t.svc.Tasks.TaskAction(ctx, actor, id, act, in)
	if err != nil {
		// As the API's 409: a refused transition lists only what this caller may take.
		return TaskView{}, "", t.svc.Tasks.NarrowConflict(ctx, actor, id, err)
	}
	return newNamer(ctx, t.svc).task(task), fmt.Sprintf("task %d is now %s", task.ID, task.State), nil
}

// statusAction maps update_task's status to the action that reaches it, or refuses
// the statuses no tool may set.
func statusAction(status string) (models.Action, error) {
	switch models.TaskState(strings.ToLower(strings.TrimSpace(status))) {
	case models.TaskInProgress:
		return models.ActStart, nil
	case models.TaskReview:
		return models.ActSubmit, nil
	case models.TaskCancelled:
		return models.ActCancel, nil
	case models.TaskCompleted, models.TaskVerified:
		return "", models.Forbidden(RuleCompletionByRunner,
			"update_task cannot set status %s: no tool posts a completion. A reviewer approves with approve_task, an independent verifier verifies with verify_task, and the completion of a worker's task belongs to the runner, which checks the output against the contract", status)
	case models.TaskAssigned, models.TaskPending:
		return "", invalidStatus("assigning and unassigning belong to create_task (assignee), the dashboard or the API")
	case models.TaskBlocked:
		return "", invalidStatus("only the runner blocks a task, when its attempts are exhausted")
	}
	return "", invalidStatus("must be in_progress, review or cancelled")
}

func invalidStatus(msg string) error {
	return &models.Error{Code: models.EINVALID, Message: "status cannot be set this way", Fields: map[string]string{"status": msg}}
}
