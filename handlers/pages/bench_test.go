package pages_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// benchTasks is the number of tasks in the database; benchGoalShare of them belong
// to the goal whose page is measured.
const (
	benchTasks     = 100000
	benchGoalTasks = 60000
)

// benchSearches are the searches BenchmarkPages measures: text every task holds
// (the newest 25 of 100,000 matches), text one task holds, text none holds, a task's
// number, and a short query (numbers and agents only).
var benchSearches = []string{"/search?q=bulk+task", "/search?q=task+99999", "/search?q=nowhere",
	"/search?q=%2312345", "/search?q=de"}

// BenchmarkPages measures page latency (p50, p99) with 100,000 tasks in the database:
// the first page of /tasks, the lead's "Waiting on you" (/queue: the bulk tasks in
// review and completed were built by nobody, so any person but the builder may approve
// and verify them — every source of the queue is full), the page of one bulk task
// (/tasks/:id, in the goal), the page of a goal holding
// 60,000 of them, warm (no event since the last load: counts cached) and cold (an
// event before every load), and the search page (benchSearches).
//
//	go test ./handlers/pages -run '^$' -bench BenchmarkPages -benchtime 200x
func BenchmarkPages(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			db := storetest.Open(b, dialect)
			e := newEnvOn(b, db, envOptions{})
			e.agent("lead", models.KindHuman, "lead")
			dev := e.agent("dev", models.KindHuman, "developer")
			g := &models.Goal{Title: "Big goal"}
			if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			sample := bulkTasks(b, e, g.ID, dev.ID)
			b.Logf("%s: inserted %d tasks in %s", dialect, benchTasks, time.Since(start).Round(time.Millisecond))
			br := e.browser().login("lead")
			goalPath := fmt.Sprintf("/goals/%d", g.ID)
			paths := []string{"/tasks", "/queue", fmt.Sprintf("/tasks/%d", sample), goalPath, goalPath + "?cold"}
			paths = append(paths, benchSearches...)
			for _, path := range paths {
				b.Run(path, func(b *testing.B) {
					var d []time.Duration
					for b.Loop() {
						if path == goalPath+"?cold" {
							// A new event invalidates the page's cached counts.
							b.StopTimer()
							if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, &models.Goal{Title: "tick"}); err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
						}
						t0 := time.Now()
						r := br.get(path)
						d = append(d, time.Since(t0))
						if r.Status != http.StatusOK {
							b.Fatalf("GET %s: %d", path, r.Status)
						}
					}
					slices.Sort(d)
					b.ReportMetric(ms64(d[len(d)*50/100]), "p50_ms")
					b.ReportMetric(ms64(d[min(len(d)-1, len(d)*99/100)]), "p99_ms")
				})
			}
		})
	}
}

func ms64(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// bulkTasks inserts benchTasks tasks through the store in one transaction per
// 10,000: benchGoalTasks in goal, spread over every state, the rest in no goal. It
// returns the id of a task in the middle of the goal, whose page BenchmarkPages loads.
func bulkTasks(b *testing.B, e *env, goal, dev int64) (sample int64) {
	b.Helper()
	now := time.Now().UTC()
	for done := 0; done < benchTasks; {
		err := e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
			for i := 0; i < 10000 && done < benchTasks; i, done = i+1, done+1 {
				t := &models.Task{Title: fmt.Sprintf("Bulk task %d", done), Brief: "Generated for the benchmark.",
					Role: "developer", State: models.TaskStates[done%len(models.TaskStates)], Approve: "runner", Verify: "runner",
					AssigneeID: &dev, CreatedAt: now, UpdatedAt: now}
				if done < benchGoalTasks {
					t.GoalID = &goal
				}
				if err := tx.CreateTask(e.ctx(), t); err != nil {
					return err
				}
				if done == benchGoalTasks/2 {
					sample = t.ID
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return sample
}
