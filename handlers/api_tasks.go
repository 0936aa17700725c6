package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// TasksAPI serves /api/v1/tasks.
type TasksAPI struct {
	store models.Store
	tasks TaskActions
	goals GoalLinker
}

// NewTasksAPI returns the task endpoints over svc.
func NewTasksAPI(store models.Store, tasks TaskActions, goals GoalLinker) *TasksAPI {
	return &TasksAPI{store: store, tasks: tasks, goals: goals}
}

// Create answers POST /tasks: the contract is fixed (or generated) now.
func (h *TasksAPI) Create(c echo.Context) error {
	var spec models.TaskSpec
	if err := DecodeJSON(c, &spec); err != nil {
		return err
	}
	t, err := h.tasks.CreateTask(c.Request().Context(), Actor(c), spec)
	if err != nil {
		return assigneeField(err)
	}
	return c.JSON(http.StatusCreated, TaskFor(Actor(c), t))
}

// List answers GET /tasks?state=&goal=&assignee=&role=&after=&limit=.
func (h *TasksAPI) List(c echo.Context) error {
	ctx := c.Request().Context()
	var fe models.FieldErrors
	f := models.TaskFilter{
		State:   models.TaskState(c.QueryParam("state")),
		GoalID:  QueryInt(c, "goal", &fe),
		Role:    c.QueryParam("role"),
		AfterID: QueryInt(c, "after", &fe),
		Limit:   QueryLimit(c, &fe),
	}
	if f.State != "" && !models.ValidTaskState(string(f.State)) {
		fe.Add("state", "must be a task state")
	}
	if name := c.QueryParam("assignee"); name != "" {
		a, err := h.store.GetAgentByName(ctx, name)
		if models.ErrorCode(err) == models.ENOTFOUND {
			fe.Add("assignee", "no agent named "+name)
		} else if err != nil {
			return err
		} else {
			f.AssigneeID = a.ID
		}
	}
	if err := fe.Err(); err != nil {
		return err
	}
	tasks, err := h.store.ListTasks(ctx, f)
	if err != nil {
		return err
	}
	out := map[string]any{"tasks": TasksFor(Actor(c), tasks)}
	if n := len(tasks); n > 0 && (f.Limit == 0 && n == 100 || n == f.Limit) {
		out["next_after"] = tasks[n-1].ID
	}
	return c.JSON(http.StatusOK, out)
}

// TaskDetail is a task with its attempts (every check's verdict and the judge's
// report) and its inbox items; the task's held-out tests only for the readers who may
// set them (TaskFor).
type TaskDetail struct {
	Task     *models.Task       `json:"task"`
	Attempts []models.Attempt   `json:"attempts"`
	Inbox    []models.InboxItem `json:"inbox"`
	// Spend is what the task's attempts used (and a running one reserved).
	Spend models.Spend `json:"spend"`
}

// Get answers GET /tasks/{id}.
func (h *TasksAPI) Get(c echo.Context) error {
	t, attempts, err := readableTask(c, h.store)
	if err != nil {
		return err
	}
	ctx, id := c.Request().Context(), t.ID
	inbox, err := h.store.ListInbox(ctx, models.InboxFilter{TaskID: id, IncludeResolved: true})
	if err != nil {
		return err
	}
	spend, err := h.store.SpendOf(ctx, models.SpendScope{TaskID: id})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, TaskDetail{Task: TaskFor(Actor(c), t), Attempts: nonNil(models.AttemptsForReader(Actor(c), attempts)), Inbox: nonNil(inbox), Spend: spend})
}

// readableTask reads the task the request's :id names and its attempts, refusing a
// reader who may not read it (an attempt token of another task).
func readableTask(c echo.Context, store models.Store) (*models.Task, []models.Attempt, error) {
	id, err := PathID(c, "id")
	if err != nil {
		return nil, nil, err
	}
	ctx := c.Request().Context()
	t, err := store.GetTask(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if err := Actor(c).MayReadTask(t); err != nil {
		return nil, nil, err
	}
	attempts, err := store.ListAttempts(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return t, attempts, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Act answers POST /tasks/{id}/{action} with {assignee, reason, notes, summary,
// files_changed, answer, brief}. A transition the task's state refuses is 409 with allowed
// narrowed to the actions this caller may take (models.TaskService.NarrowConflict).
func (h *TasksAPI) Act(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	act := models.Action(c.Param("action"))
	if _, ok := models.TaskTransitions[act]; !ok || act == models.ActBlock || act == models.ActAsk {
		return models.NotFound("action", act)
	}
	var body actionBody
	if c.Request().ContentLength != 0 {
		if err := DecodeJSON(c, &body); err != nil {
			return err
		}
	}
	in, err := body.input()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := h.tasks.TaskAction(ctx, Actor(c), id, act, in)
	if err != nil {
		return assigneeField(h.tasks.NarrowConflict(ctx, Actor(c), id, err))
	}
	return c.JSON(http.StatusOK, TaskFor(Actor(c), t))
}

// actionBody is a task action's JSON body: models.ActionInput, whose agent (the one
// assigned by assign and reassign) is named assignee, as everywhere else in the API;
// agent is accepted as its alias.
type actionBody struct {
	models.ActionInput
	Assignee string `json:"assignee,omitempty"`
}

// input is the service's input for b: assignee and its alias agent naming two
// agents is EINVALID.
func (b actionBody) input() (models.ActionInput, error) {
	in := b.ActionInput
	if b.Assignee == "" {
		return in, nil
	}
	if in.Agent != "" && !strings.EqualFold(strings.TrimSpace(in.Agent), strings.TrimSpace(b.Assignee)) {
		return in, &models.Error{Code: models.EINVALID, Message: "validation failed",
			Fields: map[string]string{"agent": "is an alias of assignee and names another agent; give one of the two"}}
	}
	in.Agent = b.Assignee
	return in, nil
}

// assigneeField names the service's field agent (the agent being assigned) assignee,
// the API's name for it.
func assigneeField(err error) error {
	var e *models.Error
	if !errors.As(err, &e) || e.Fields["agent"] == "" {
		return err
	}
	renamed := *e
	renamed.Fields = make(map[string]string, len(e.Fields))
	for k, v := range e.Fields {
		if k == "agent" {
			k = "assignee"
		}
		renamed.Fields[k] = v
	}
	return &renamed
}

// Ask answers POST /tasks/{id}/questions {question}: the worker doing the task (with
// its attempt token) asks a person a question; when its run ends the task waits for
// the answer (POST /tasks/{id}/answer {answer}).
func (h *TasksAPI) Ask(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Question string `json:"question"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.tasks.AskQuestion(c.Request().Context(), Actor(c), id, in.Question)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, TaskFor(Actor(c), t))
}

// Link answers POST /tasks/{id}/link {goal_id}.
func (h *TasksAPI) Link(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		GoalID int64 `json:"goal_id"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	if in.GoalID <= 0 {
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{"goal_id": "is required"}}
	}
	t, err := h.goals.LinkTaskToGoal(c.Request().Context(), Actor(c), id, in.GoalID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, TaskFor(Actor(c), t))
}
