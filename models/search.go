package models

import (
	"context"
	"strconv"
	"strings"
)

// MinSearchText is the shortest text searched for in titles and briefs: the
// trigram indexes behind the search cannot answer less. A shorter query looks up
// ids and agents only.
const MinSearchText = 3

// maxSearchQuery bounds the text searched for, in bytes.
const maxSearchQuery = 200

// SearchService finds tasks, goals and agents by id, title, brief or name.
type SearchService struct {
	*core
}

// SearchResults is what Search found, each group newest first after any exact id.
type SearchResults struct {
	// Query is the text searched for, trimmed.
	Query string
	// ID is the number the query names ("123" or "#123"), 0 when none.
	ID     int64
	Tasks  []Task
	Goals  []Goal
	Agents []Agent // as the viewer may see them (Agent.VisibleTo)
	// Short is set when the query was too short (under MinSearchText characters)
	// to search titles and briefs: only ids and agents were looked up.
	Short bool
}

// Empty reports whether nothing was found.
func (r *SearchResults) Empty() bool { return len(r.Tasks)+len(r.Goals)+len(r.Agents) == 0 }

// Search finds up to limit of each: tasks whose title or brief contains q, goals
// whose title or description does, agents whose name or one of whose roles does,
// and the task, goal and agent whose id q names ("123" or "#123", the id alone).
// Agents are matched only on what every viewer sees of them (never their command
// or workdir) and returned as viewer may see them. A token scoped to an attempt
// may not search.
func (s *SearchService) Search(ctx context.Context, viewer *Agent, q string, limit int) (*SearchResults, error) {
	if err := viewer.Unscoped("search"); err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	if len(q) > maxSearchQuery {
		q = strings.ToValidUTF8(q[:maxSearchQuery], "")
	}
	r := &SearchResults{Query: q}
	if q == "" {
		return r, nil
	}
	idOnly := strings.HasPrefix(q, "#")
	if n, err := strconv.ParseInt(strings.TrimPrefix(q, "#"), 10, 64); err == nil && n > 0 {
		r.ID = n
	}
	if err := s.byID(ctx, r); err != nil {
		return nil, err
	}
	if err := s.agents(ctx, viewer, r, limit); err != nil {
		return nil, err
	}
	if idOnly {
		return r, nil
	}
	if len([]rune(q)) < MinSearchText {
		r.Short = true
		return r, nil
	}
	tasks, err := s.store.SearchTasks(ctx, q, limit)
	if err != nil {
		return nil, err
	}
	goals, err := s.store.SearchGoals(ctx, q, limit)
	if err != nil {
		return nil, err
	}
	r.Tasks = appendNew(r.Tasks, tasks, func(t Task) int64 { return t.ID }, limit)
	r.Goals = appendNew(r.Goals, goals, func(g Goal) int64 { return g.ID }, limit)
	return r, nil
}

// byID puts the task and the goal r.ID names first in their groups.
func (s *SearchService) byID(ctx context.Context, r *SearchResults) error {
	if r.ID == 0 {
		return nil
	}
	t, err := s.store.GetTask(ctx, r.ID)
	if err == nil {
		r.Tasks = append(r.Tasks, *t)
	} else if ErrorCode(err) != ENOTFOUND {
		return err
	}
	g, err := s.store.GetGoal(ctx, r.ID)
	if err == nil {
		r.Goals = append(r.Goals, *g)
	} else if ErrorCode(err) != ENOTFOUND {
		return err
	}
	return nil
}

// agents fills r.Agents: the agent with id r.ID, then those whose name or a role
// contains the query, by name; agents are few and read whole.
func (s *SearchService) agents(ctx context.Context, viewer *Agent, r *SearchResults, limit int) error {
	list, err := s.store.ListAgents(ctx)
	if err != nil {
		return err
	}
	text := strings.ToLower(strings.TrimPrefix(r.Query, "#"))
	for _, a := range list {
		if len(r.Agents) >= max(limit, 1) {
			break
		}
		if a.ID == r.ID || (!strings.HasPrefix(r.Query, "#") && agentMatches(a, text)) {
			r.Agents = append(r.Agents, a.VisibleTo(viewer))
		}
	}
	return nil
}

// agentMatches reports whether a's name or one of its roles contains text (lower case).
func agentMatches(a Agent, text string) bool {
	if strings.Contains(a.Name, text) {
		return true
	}
	for _, role := range a.Roles {
		if strings.Contains(role, text) {
			return true
		}
	}
	return false
}

// appendNew appends to have the items of more it does not hold yet, up to limit.
func appendNew[T any](have, more []T, id func(T) int64, limit int) []T {
	seen := make(map[int64]bool, len(have))
	for _, x := range have {
		seen[id(x)] = true
	}
	for _, x := range more {
		if len(have) >= max(limit, 1) {
			break
		}
		if !seen[id(x)] {
			have = append(have, x)
		}
	}
	return have
}
