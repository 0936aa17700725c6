package models

import (
	"context"
	"time"
)

// StatsStore is the part of a store scorecards and goal progress read. It is apart
// from Store so that only they depend on it; the gorm store's DB implements it.
type StatsStore interface {
	// StatsFacts returns the attempts q selects (started in [Since, Until), of
	// q.AgentID and of tasks of q.Role when set) with their tasks' standing, and the
	// blocked inbox items made in the window (of tasks of q.Role when set).
	StatsFacts(ctx context.Context, q StatsQuery) (StatsFacts, error)
	// GoalProgressFacts counts goal goalID's tasks created and done per UTC day and
	// its failed attempts per stage.
	GoalProgressFacts(ctx context.Context, goalID int64) (GoalProgressFacts, error)
}

// statsAccess refuses a request made with an attempt token (a worker's token is for
// its task, not for reading how others work) and returns the service's store as a
// StatsStore.
func (s *StatsService) statsAccess(viewer *Agent) (StatsStore, error) {
	if err := viewer.Unscoped("read scorecards"); err != nil {
		return nil, err
	}
	st, ok := s.store.(StatsStore)
	if !ok {
		return nil, Errorf(EINTERNAL, "this store keeps no statistics")
	}
	return st, nil
}

// windowFacts reads from st the facts of the last days UTC days (StatsWindow), of
// agent agentID when it is not 0.
func (s *StatsService) windowFacts(ctx context.Context, st StatsStore, days int, agentID int64) (since, until time.Time, facts StatsFacts, err error) {
	since, until = StatsWindow(s.now(), days)
	facts, err = st.StatsFacts(ctx, StatsQuery{Since: since, Until: until.Add(time.Microsecond), AgentID: agentID})
	return since, until, facts, err
}

// AgentStats is agent id's scorecard over the last days (7 or 30) UTC days, with its
// per-role split, daily bars and duration histogram. Any signed-in agent may read it;
// a request with an attempt token may not.
func (s *StatsService) AgentStats(ctx context.Context, viewer *Agent, id int64, days int) (*AgentStats, error) {
	st, err := s.statsAccess(viewer)
	if err != nil {
		return nil, err
	}
	if err := CheckStatsDays(days); err != nil {
		return nil, err
	}
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.Kind == KindSystem {
		return nil, NotFound("agent", id)
	}
	since, until, facts, err := s.windowFacts(ctx, st, days, id)
	if err != nil {
		return nil, err
	}
	out := AgentStatsOf(a, days, since, until, facts)
	if hf, ok, err := s.honestyFacts(ctx, since, until, id); err != nil {
		return nil, err
	} else if ok {
		out.Honesty = AgentHonestyOf(id, hf)
	}
	return &out, nil
}

// ScoreBoard ranks every agent and every task role over the last days (7 or 30) UTC
// days. Any signed-in agent may read it; a request with an attempt token may not.
func (s *StatsService) ScoreBoard(ctx context.Context, viewer *Agent, days int) (*ScoreBoard, error) {
	st, err := s.statsAccess(viewer)
	if err != nil {
		return nil, err
	}
	if err := CheckStatsDays(days); err != nil {
		return nil, err
	}
	agents, err := s.store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	since, until, facts, err := s.windowFacts(ctx, st, days, 0)
	if err != nil {
		return nil, err
	}
	b := BoardOf(agents, days, since, until, facts)
	if hf, ok, err := s.honestyFacts(ctx, since, until, 0); err != nil {
		return nil, err
	} else if ok {
		b.Honesty = HonestyBoardOf(agents, hf)
	}
	return &b, nil
}

// GoalProgress is goal id's burn-down (tasks left per day, at most
// GoalProgressDays days) and the stages where its attempts fail.
func (s *StatsService) GoalProgress(ctx context.Context, viewer *Agent, id int64) (*GoalProgress, error) {
	st, err := s.statsAccess(viewer)
	if err != nil {
		return nil, err
	}
	g, err := s.store.GetGoal(ctx, id)
	if err != nil {
		return nil, err
	}
	facts, err := st.GoalProgressFacts(ctx, id)
	if err != nil {
		return nil, err
	}
	p := ComputeGoalProgress(facts, g.CreatedAt, s.now())
	return &p, nil
}
