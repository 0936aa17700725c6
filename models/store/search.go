package store

import (
	"context"
	"strings"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

// SearchTasks returns up to limit tasks whose title or brief contains text
// (case-insensitive), newest first. text should have models.MinSearchText or more
// characters: the trigram indexes (SQLite FTS5 tasks_search, PostgreSQL pg_trgm
// tasks_search_idx, migration 0022) find nothing shorter on SQLite and scan on
// PostgreSQL.
func (o *ops) SearchTasks(ctx context.Context, text string, limit int) ([]models.Task, error) {
	var recs []taskRecord
	q := o.q(ctx)
	if o.db.dialect == DialectSQLite {
		q = q.Where("id IN (SELECT rowid FROM tasks_search WHERE tasks_search MATCH ? ORDER BY rowid DESC LIMIT ?)",
			ftsPhrase(text), listLimit(limit))
	} else {
		q = q.Where("(title || ' ' || brief) ILIKE ?", likePattern(text))
	}
	if err := q.Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// SearchGoals is SearchTasks for goals: their title or description contains text.
func (o *ops) SearchGoals(ctx context.Context, text string, limit int) ([]models.Goal, error) {
	var recs []goalRecord
	q := o.q(ctx)
	if o.db.dialect == DialectSQLite {
		q = q.Where("id IN (SELECT rowid FROM goals_search WHERE goals_search MATCH ? ORDER BY rowid DESC LIMIT ?)",
			ftsPhrase(text), listLimit(limit))
	} else {
		q = q.Where("(title || ' ' || description) ILIKE ?", likePattern(text))
	}
	if err := q.Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error; err != nil {
		return nil, mapError(err, "goals")
	}
	out := make([]models.Goal, 0, len(recs))
	for i := range recs {
		out = append(out, *fromGoalRecord(&recs[i]))
	}
	return out, nil
}

// ftsPhrase quotes text as one FTS5 phrase: with the trigram tokenizer, a substring.
func ftsPhrase(text string) string {
	return `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
}

// likePattern is a LIKE pattern matching text anywhere, its wildcards escaped
// (PostgreSQL's default escape character is the backslash).
func likePattern(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(text) + "%"
}

// keyset orders q, a list of table ("tasks" or "goals"), newest first by sort
// (models.ListSortUpdated, models.ListSortCreated, else the id), the id breaking
// ties, and keeps the rows after row afterID in that order when afterID > 0. The
// cursor row is read again, so a list sorted by update skips or repeats a row that
// was updated between two pages.
func keyset(q *gorm.DB, table, sort string, afterID int64) *gorm.DB {
	col := ""
	switch sort {
	case models.ListSortUpdated:
		col = "updated_at"
	case models.ListSortCreated:
		col = "created_at"
	}
	if col == "" {
		if afterID > 0 {
			q = q.Where("id < ?", afterID)
		}
		return q.Order("id DESC")
	}
	if afterID > 0 {
		// The table and column names are constants of this function, never input.
		q = q.Where("("+col+", id) < (SELECT "+col+", id FROM "+table+" WHERE id = ?)", afterID)
	}
	return q.Order(col + " DESC").Order("id DESC")
}
