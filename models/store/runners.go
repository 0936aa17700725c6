package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

func init() { records = append(records, &runnerRecord{}) }

var _ models.RunnerRegistry = (*ops)(nil)

// runnerRecord is a row of runners: one process of a runner id and its heartbeat.
type runnerRecord struct {
	RunnerID   string `gorm:"primaryKey"`
	Instance   string `gorm:"primaryKey"`
	Host       string
	Owner      string
	AliveUntil time.Time
	StartedAt  time.Time
}

func (runnerRecord) TableName() string { return "runners" }

// BeatRunner inserts or refreshes inst's row; see models.RunnerRegistry.
func (o *ops) BeatRunner(ctx context.Context, inst models.RunnerInstance) error {
	rec := &runnerRecord{RunnerID: inst.RunnerID, Instance: inst.Instance, Host: inst.Host, Owner: inst.Owner,
		AliveUntil: normTime(inst.AliveUntil), StartedAt: normTime(inst.StartedAt)}
	err := o.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "runner_id"}, {Name: "instance"}},
		DoUpdates: clause.AssignmentColumns([]string{"alive_until"}),
	}).Create(rec).Error
	return mapError(err, "runner")
}

// RunnerInstances returns runnerID's recorded instances; see models.RunnerRegistry.
func (o *ops) RunnerInstances(ctx context.Context, runnerID string) ([]models.RunnerInstance, error) {
	var recs []runnerRecord
	if err := o.q(ctx).Where("runner_id = ?", runnerID).Order("started_at, instance").Find(&recs).Error; err != nil {
		return nil, mapError(err, "runners")
	}
	out := make([]models.RunnerInstance, len(recs))
	for i, r := range recs {
		out[i] = models.RunnerInstance{RunnerID: r.RunnerID, Instance: r.Instance, Host: r.Host, Owner: r.Owner,
			AliveUntil: r.AliveUntil.UTC(), StartedAt: r.StartedAt.UTC()}
	}
	return out, nil
}

// ForgetRunnerInstances deletes instances' rows; see models.RunnerRegistry.
func (o *ops) ForgetRunnerInstances(ctx context.Context, runnerID string, instances []string, silentBefore time.Time) error {
	if len(instances) > 0 {
		err := o.q(ctx).Where("runner_id = ? AND instance IN ?", runnerID, instances).Delete(&runnerRecord{}).Error
		if err != nil {
			return mapError(err, "runners")
		}
	}
	if !silentBefore.IsZero() {
		err := o.q(ctx).Where("alive_until < ?", normTime(silentBefore)).Delete(&runnerRecord{}).Error
		if err != nil {
			return mapError(err, "runners")
		}
	}
	return nil
}

// ExpireOwnLeases ends owner's leases up to notAfter; see models.RunnerRegistry.
func (o *ops) ExpireOwnLeases(ctx context.Context, owner string, notAfter, now time.Time, keep []int64) (int64, error) {
	if owner == "" {
		return 0, nil
	}
	q := o.q(ctx).Model(&taskRecord{}).Where("state = ? AND lease_owner = ? AND lease_until > ? AND lease_until <= ?",
		string(models.TaskInProgress), owner, normTime(now), normTime(notAfter))
	if len(keep) > 0 {
		q = q.Where("id NOT IN ?", keep)
	}
	res := q.Update("lease_until", normTime(now))
	return res.RowsAffected, mapError(res.Error, "leases")
}

// silentOwners selects the runner ids whose every recorded instance was silent at
// the time bound to its parameter: their leases are as good as expired.
const silentOwners = "SELECT runner_id FROM runners GROUP BY runner_id HAVING MAX(alive_until) < ?"

// ExpireSilentLeases ends silent runners' leases; see models.RunnerRegistry. The
// ready query and the claim count agents' running tasks by lease_until alone, so
// ending the lease is all a takeover needs, whichever way a claim counts slots.
func (o *ops) ExpireSilentLeases(ctx context.Context, now time.Time) (int64, error) {
	n := normTime(now)
	silent := o.g.Session(&gorm.Session{NewDB: true}).Raw(silentOwners, n)
	res := o.q(ctx).Model(&taskRecord{}).Where("state = ? AND lease_until > ? AND lease_owner IN (?)",
		string(models.TaskInProgress), n, silent).Update("lease_until", n)
	return res.RowsAffected, mapError(res.Error, "leases")
}
