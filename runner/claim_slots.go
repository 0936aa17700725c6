package runner

import (
	"context"
	"slices"
	"time"

	"github.com/countersign/countersign/models"
)

// slotPool is the free agent slots one claim locked (models.Claimer.LockFreeSlots),
// handed to its tasks in memory: a try the rules refuse gives its slot back at no
// cost, and the slots the claim kept are written with one statement at its end
// (AssignSlots), instead of a statement per task.
type slotPool struct {
	free  map[int64][]int   // agent ID → its locked free slots, lowest first
	taken []models.SlotTake // handed out, in order
}

// lockSlots locks, for a claim of tasks ready tasks, the free slots of the idle
// agents: as many of each as it has room for by its load, and no more than there are
// tasks, so that another runner's claim finds the rest.
func lockSlots(ctx context.Context, c models.Claimer, idle []*models.WorkerLoad, tasks int, now time.Time) (*slotPool, error) {
	want := make(map[int64]int, len(idle))
	for _, l := range idle {
		want[l.Agent.ID] = min(max(l.Agent.Concurrency, 1)-l.Running, tasks)
	}
	free, err := c.LockFreeSlots(ctx, want, now)
	if err != nil {
		return nil, err
	}
	return &slotPool{free: free}, nil
}

// take gives task the agent's lowest free slot and reports whether there was one.
func (s *slotPool) take(agent, task int64) bool {
	free := s.free[agent]
	if len(free) == 0 {
		return false
	}
	s.taken = append(s.taken, models.SlotTake{AgentID: agent, Slot: free[0], TaskID: task})
	s.free[agent] = free[1:]
	return true
}

// giveBack returns the slot task took to its agent's free ones.
func (s *slotPool) giveBack(task int64) {
	i := slices.IndexFunc(s.taken, func(t models.SlotTake) bool { return t.TaskID == task })
	if i < 0 {
		return
	}
	t := s.taken[i]
	s.taken = slices.Delete(s.taken, i, i+1)
	free := append(s.free[t.AgentID], t.Slot)
	slices.Sort(free)
	s.free[t.AgentID] = free
}
