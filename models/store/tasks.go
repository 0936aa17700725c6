package store

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

// taskRecord is a row of tasks; contract is JSON. Dependencies live in task_deps, and
// as they never change after creation, DependsOn keeps a copy (a JSON array of ids,
// "" for none) so that reading a task takes one query.
type taskRecord struct {
	ID             int64 `gorm:"primaryKey"`
	GoalID         *int64
	RunID          *int64
	StepNum        int
	Title          string
	Brief          string
	Role           string
	State          string
	Priority       int
	Approve        string
	Verify         string
	Contract       string
	DependsOn      string
	CreatorID      *int64 // NULL: created by the operator from the command line
	ParentTaskID   *int64 // created through an attempt token of this task
	SpawnedBy      *int64 // the pilot's task of a minion task
	AssigneeID     *int64
	BuilderID      *int64
	ApproverID     *int64
	VerifierID     *int64
	Summary        string
	FilesChanged   string
	Notes          string
	Reason         string
	Rejections     int
	AttemptsUsed   int
	Override       bool
	LeaseOwner     string
	LeaseUntil     *time.Time
	CreatedAt      time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt      time.Time `gorm:"autoUpdateTime:false"`
	VerifiedAt     *time.Time
	Branch         string
	BaseCommit     string
	VerifiedCommit string
	Fingerprint    string // JSON; "" when none
	Drift          string // JSON; "" when fresh
	Triage         string // JSON; "" when never triaged
	Questions      string // JSON array; "" when none
	ReviewOf       *int64 // a review's fix task: the reviewed task
	ReviewWarnings string
	Canary         string // a canary task's source (models.Task.Canary); "" for real work
}

func (taskRecord) TableName() string { return "tasks" }

// taskDepRecord is a row of task_deps: TaskID depends on DependsOnID.
type taskDepRecord struct {
	TaskID      int64 `gorm:"primaryKey;autoIncrement:false"`
	DependsOnID int64 `gorm:"primaryKey;autoIncrement:false"`
}

func (taskDepRecord) TableName() string { return "task_deps" }

func toTaskRecord(t *models.Task) (*taskRecord, error) {
	contract, err := toJSON(t.Contract, "{}")
	if err != nil {
		return nil, err
	}
	deps, err := toJSON(normDeps(t.DependsOn), "")
	if err != nil {
		return nil, err
	}
	fp, err := toJSON(t.Fingerprint, "")
	if err != nil {
		return nil, err
	}
	drift, err := toJSON(t.Drift, "")
	if err != nil {
		return nil, err
	}
	triage, err := toJSON(t.Triage, "")
	if err != nil {
		return nil, err
	}
	questions := ""
	if len(t.Questions) > 0 {
		if questions, err = toJSON(t.Questions, ""); err != nil {
			return nil, err
		}
	}
	return &taskRecord{
		ID:             t.ID,
		GoalID:         t.GoalID,
		RunID:          t.RunID,
		StepNum:        t.StepNum,
		Title:          t.Title,
		Brief:          t.Brief,
		Role:           t.Role,
		State:          string(t.State),
		Priority:       t.Priority,
		Approve:        t.Approve,
		Verify:         t.Verify,
		Contract:       contract,
		DependsOn:      deps,
		CreatorID:      creatorRef(t.CreatorID),
		ParentTaskID:   t.ParentTaskID,
		SpawnedBy:      t.SpawnedBy,
		AssigneeID:     t.AssigneeID,
		BuilderID:      t.BuilderID,
		ApproverID:     t.ApproverID,
		VerifierID:     t.VerifierID,
		Summary:        t.Summary,
		FilesChanged:   t.FilesChanged,
		Notes:          t.Notes,
		Reason:         t.Reason,
		Rejections:     t.Rejections,
		AttemptsUsed:   t.AttemptsUsed,
		Override:       t.Override,
		LeaseOwner:     t.LeaseOwner,
		LeaseUntil:     normTimePtr(t.LeaseUntil),
		CreatedAt:      normTime(t.CreatedAt),
		UpdatedAt:      normTime(t.UpdatedAt),
		VerifiedAt:     normTimePtr(t.VerifiedAt),
		Branch:         t.Branch,
		BaseCommit:     t.Base,
		VerifiedCommit: t.Commit,
		Fingerprint:    fp,
		Drift:          drift,
		Triage:         triage,
		Questions:      questions,
		ReviewOf:       t.ReviewOf,
		ReviewWarnings: t.ReviewWarnings,
		Canary:         t.Canary,
	}, nil
}

func fromTaskRecord(r *taskRecord) (*models.Task, error) {
	t := &models.Task{
		ID:             r.ID,
		GoalID:         r.GoalID,
		RunID:          r.RunID,
		StepNum:        r.StepNum,
		Title:          r.Title,
		Brief:          r.Brief,
		Role:           r.Role,
		State:          models.TaskState(r.State),
		Priority:       r.Priority,
		Approve:        r.Approve,
		Verify:         r.Verify,
		CreatorID:      creatorID(r.CreatorID),
		ParentTaskID:   r.ParentTaskID,
		SpawnedBy:      r.SpawnedBy,
		AssigneeID:     r.AssigneeID,
		BuilderID:      r.BuilderID,
		ApproverID:     r.ApproverID,
		VerifierID:     r.VerifierID,
		Summary:        r.Summary,
		FilesChanged:   r.FilesChanged,
		Notes:          r.Notes,
		Reason:         r.Reason,
		Rejections:     r.Rejections,
		AttemptsUsed:   r.AttemptsUsed,
		Override:       r.Override,
		LeaseOwner:     r.LeaseOwner,
		LeaseUntil:     normTimePtr(r.LeaseUntil),
		CreatedAt:      normTime(r.CreatedAt),
		UpdatedAt:      normTime(r.UpdatedAt),
		VerifiedAt:     normTimePtr(r.VerifiedAt),
		Branch:         r.Branch,
		Base:           r.BaseCommit,
		Commit:         r.VerifiedCommit,
		ReviewOf:       r.ReviewOf,
		ReviewWarnings: r.ReviewWarnings,
		Canary:         r.Canary,
	}
	if err := fromJSON(r.Contract, &t.Contract, "tasks.contract"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.DependsOn, &t.DependsOn, "tasks.depends_on"); err != nil {
		return nil, err
	}
	t.DependsOn = normDeps(t.DependsOn)
	if err := fromJSON(r.Fingerprint, &t.Fingerprint, "tasks.fingerprint"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.Drift, &t.Drift, "tasks.drift"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.Triage, &t.Triage, "tasks.triage"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.Questions, &t.Questions, "tasks.questions"); err != nil {
		return nil, err
	}
	return t, nil
}

// fromTaskRecords maps task rows to tasks.
func fromTaskRecords(recs []taskRecord) ([]models.Task, error) {
	out := make([]models.Task, 0, len(recs))
	for i := range recs {
		t, err := fromTaskRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// normDeps sorts and de-duplicates dependency ids; nil when there are none.
func normDeps(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// CreateTask stores a new task with its dependencies and sets t.ID; an empty state is
// stored as pending. DependsOn is stored sorted and without duplicates; a dependency
// on a missing task is EINVALID.
func (o *ops) CreateTask(ctx context.Context, t *models.Task) error {
	if t.State == "" {
		t.State = models.TaskPending
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	rec, err := toTaskRecord(t)
	if err != nil {
		return err
	}
	rec.ID = 0
	err = o.atomic(ctx, func(o *ops) error {
		if err := o.q(ctx).Create(rec).Error; err != nil {
			return mapError(err, "task")
		}
		return o.saveDeps(ctx, rec.ID, normDeps(t.DependsOn))
	})
	if err != nil {
		return err
	}
	out, err := fromTaskRecord(rec)
	if err != nil {
		return err
	}
	*t = *out
	return nil
}

// UpdateTask saves every field of t but CreatedAt and DependsOn, and sets UpdatedAt.
// Dependencies are fixed when the task is created (like its contract, they are part of
// what was delegated), so t.DependsOn is neither saved nor refreshed: after the call it
// holds what the caller put there, and the stored dependencies stay as created.
func (o *ops) UpdateTask(ctx context.Context, t *models.Task) error {
	t.UpdatedAt = now()
	rec, err := toTaskRecord(t)
	if err != nil {
		return err
	}
	res := o.q(ctx).Model(rec).Select("*").Omit("id", "created_at", "depends_on").Updates(rec)
	if res.Error != nil {
		return mapError(res.Error, "task")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("task", t.ID)
	}
	out, err := fromTaskRecord(rec)
	if err != nil {
		return err
	}
	*t = *out
	return nil
}

// AddDependency adds dependsOn to task taskID's dependencies, in task_deps and in the
// copy on the task's row.
func (o *ops) AddDependency(ctx context.Context, taskID, dependsOn int64) error {
	t, err := o.GetTask(ctx, taskID)
	if err != nil {
		return err
	}
	if slices.Contains(t.DependsOn, dependsOn) {
		return nil
	}
	if err := o.saveDeps(ctx, taskID, []int64{dependsOn}); err != nil {
		return err
	}
	deps, err := toJSON(normDeps(append(t.DependsOn, dependsOn)), "")
	if err != nil {
		return err
	}
	return mapError(o.q(ctx).Model(&taskRecord{}).Where("id = ?", taskID).Update("depends_on", deps).Error, "task")
}

// RemoveDependency takes dependsOn off task taskID's dependencies, in task_deps and
// in the copy on the task's row.
func (o *ops) RemoveDependency(ctx context.Context, taskID, dependsOn int64) error {
	t, err := o.GetTask(ctx, taskID)
	if err != nil {
		return err
	}
	if !slices.Contains(t.DependsOn, dependsOn) {
		return nil
	}
	err = o.q(ctx).Where("task_id = ? AND depends_on_id = ?", taskID, dependsOn).Delete(&taskDepRecord{}).Error
	if err != nil {
		return mapError(err, "task dependencies")
	}
	rest := slices.DeleteFunc(slices.Clone(t.DependsOn), func(d int64) bool { return d == dependsOn })
	deps, err := toJSON(normDeps(rest), "")
	if err != nil {
		return err
	}
	return mapError(o.q(ctx).Model(&taskRecord{}).Where("id = ?", taskID).Update("depends_on", deps).Error, "task")
}

func (o *ops) saveDeps(ctx context.Context, taskID int64, deps []int64) error {
	if len(deps) == 0 {
		return nil
	}
	if o.tx != nil {
		for _, d := range deps {
			delete(o.tx.noDependents, d) // it has one now
		}
	}
	recs := make([]taskDepRecord, len(deps))
	for i, d := range deps {
		if d == taskID {
			return models.Errorf(models.EINVALID, "task %d cannot depend on itself", taskID)
		}
		recs[i] = taskDepRecord{TaskID: taskID, DependsOnID: d}
	}
	if err := o.q(ctx).Create(&recs).Error; err != nil {
		if constraintKind(err) == "foreign_key" {
			return models.Errorf(models.EINVALID, "task %d depends on a task that does not exist", taskID)
		}
		return mapError(err, "task dependencies")
	}
	return nil
}

// GetTask returns the task with this id.
func (o *ops) GetTask(ctx context.Context, id int64) (*models.Task, error) {
	return o.getTask(ctx, o.q(ctx), id)
}

// LockTask returns the task with this id, locked for update until the transaction
// ends.
//
// It also finds out, in the same statement, whether any task depends on this one:
// when none does, Dependents answers from that within the transaction instead of
// asking again (a runner's settle asks, on its hot path).
func (o *ops) LockTask(ctx context.Context, id int64) (*models.Task, error) {
	var row struct {
		Task          taskRecord `gorm:"embedded"`
		HasDependents bool
	}
	q := o.forUpdate(o.q(ctx).Model(&taskRecord{}).
		Select("tasks.*, EXISTS (SELECT 1 FROM task_deps d WHERE d.depends_on_id = tasks.id) AS has_dependents"))
	if err := q.Take(&row, "id = ?", id).Error; err != nil {
		return nil, readError(err, "task", id)
	}
	if !row.HasDependents {
		o.markNoDependents(id)
	}
	return fromTaskRecord(&row.Task)
}

// markNoDependents records, in a transaction, that task id has no dependents: Dependents
// then answers without a query. The task is locked, so none can be added meanwhile
// but by this transaction (AddDependency forgets it).
func (o *ops) markNoDependents(id int64) {
	if o.tx == nil {
		return
	}
	if o.tx.noDependents == nil {
		o.tx.noDependents = map[int64]bool{}
	}
	o.tx.noDependents[id] = true
}

func (o *ops) getTask(ctx context.Context, q *gorm.DB, id int64) (*models.Task, error) {
	var rec taskRecord
	if err := q.Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "task", id)
	}
	return fromTaskRecord(&rec)
}

// GetTasks returns the tasks with these ids in ascending id order; ids that do not
// exist are left out (compare the lengths to find them).
func (o *ops) GetTasks(ctx context.Context, ids []int64) ([]models.Task, error) {
	if len(ids) == 0 {
		return []models.Task{}, nil
	}
	var recs []taskRecord
	if err := o.q(ctx).Where("id IN ?", normDeps(ids)).Order("id").Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// ListTasks returns tasks newest first (by f.Sort), at most f.Limit (default 100,
// at most 1000), after task f.AfterID in that order when it is set.
func (o *ops) ListTasks(ctx context.Context, f models.TaskFilter) ([]models.Task, error) {
	q := keyset(o.q(ctx), "tasks", f.Sort, f.AfterID).Limit(listLimit(f.Limit))
	if f.State != "" {
		q = q.Where("state = ?", string(f.State))
	}
	if f.GoalID > 0 {
		q = q.Where("goal_id = ?", f.GoalID)
	}
	if f.AssigneeID > 0 {
		q = q.Where("assignee_id = ?", f.AssigneeID)
	}
	if f.Role != "" {
		q = q.Where("role = ?", f.Role)
	}
	var recs []taskRecord
	if err := q.Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// taskHeadColumns are the columns ListTaskHeads reads.
var taskHeadColumns = []string{"id", "goal_id", "title", "role", "state", "approve", "verify", "creator_id",
	"assignee_id", "builder_id", "approver_id", "updated_at", "run_id", "step_num", "review_of", "override"}

// ListTaskHeads lists tasks as ListTasks does, reading only taskHeadColumns.
func (o *ops) ListTaskHeads(ctx context.Context, f models.TaskFilter) ([]models.Task, error) {
	q := o.q(ctx).Select(taskHeadColumns).Order("id DESC").Limit(listLimit(f.Limit))
	if f.State != "" {
		q = q.Where("state = ?", string(f.State))
	}
	if f.GoalID > 0 {
		q = q.Where("goal_id = ?", f.GoalID)
	}
	if f.AssigneeID > 0 {
		q = q.Where("assignee_id = ?", f.AssigneeID)
	}
	var recs []taskRecord
	if err := q.Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	out := make([]models.Task, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		out = append(out, models.Task{ID: r.ID, GoalID: r.GoalID, Title: r.Title, Role: r.Role, State: models.TaskState(r.State),
			Approve: r.Approve, Verify: r.Verify, CreatorID: creatorID(r.CreatorID), AssigneeID: r.AssigneeID,
			BuilderID: r.BuilderID, ApproverID: r.ApproverID, UpdatedAt: normTime(r.UpdatedAt),
			RunID: r.RunID, StepNum: r.StepNum, ReviewOf: r.ReviewOf, Override: r.Override})
	}
	return out, nil
}

// Dependents lists the tasks that depend on task id, in ascending id order.
func (o *ops) Dependents(ctx context.Context, id int64) ([]models.Task, error) {
	var recs []taskRecord
	if o.tx != nil && o.tx.noDependents[id] {
		return fromTaskRecords(recs) // LockTask saw none, and this transaction added none
	}
	err := o.q(ctx).
		Where("id IN (?)", o.q(ctx).Model(&taskDepRecord{}).Select("task_id").Where("depends_on_id = ?", id)).
		Order("id").Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// CountTasks counts tasks per state, of one goal when goalID > 0, else of all. Every
// state of models.TaskStates is present, with 0 when no task is in it.
func (o *ops) CountTasks(ctx context.Context, goalID int64) (map[models.TaskState]int, error) {
	q := o.q(ctx).Model(&taskRecord{})
	if goalID > 0 {
		q = q.Where("goal_id = ?", goalID)
	}
	return countByState(q, models.TaskStates, "tasks")
}

// CountTasksByGoal counts the tasks of each goal per state with one grouped query
// (the goals list would otherwise ask once per goal). Every id of goalIDs is a key,
// and each of its maps has every state of models.TaskStates.
func (o *ops) CountTasksByGoal(ctx context.Context, goalIDs []int64) (map[int64]map[models.TaskState]int, error) {
	out := make(map[int64]map[models.TaskState]int, len(goalIDs))
	for _, id := range goalIDs {
		m := make(map[models.TaskState]int, len(models.TaskStates))
		for _, s := range models.TaskStates {
			m[s] = 0
		}
		out[id] = m
	}
	if len(goalIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		GoalID int64
		State  string
		N      int
	}
	err := o.q(ctx).Model(&taskRecord{}).Select("goal_id, state, COUNT(*) AS n").
		Where("goal_id IN ?", goalIDs).Group("goal_id, state").Scan(&rows).Error
	if err != nil {
		return nil, mapError(err, "tasks")
	}
	for _, r := range rows {
		out[r.GoalID][models.TaskState(r.State)] = r.N
	}
	return out, nil
}

// countByState counts the rows q selects per state, with every one of states present
// (0 when no row is in it).
func countByState[S ~string](q *gorm.DB, states []S, what string) (map[S]int, error) {
	var rows []struct {
		State string
		N     int
	}
	if err := q.Select("state, COUNT(*) AS n").Group("state").Scan(&rows).Error; err != nil {
		return nil, mapError(err, what)
	}
	out := make(map[S]int, len(states))
	for _, s := range states {
		out[s] = 0
	}
	for _, r := range rows {
		out[S(r.State)] = r.N
	}
	return out, nil
}
