package store

import (
	"context"
	"strings"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

// searchWindow is how many of the newest rows a search reads first, without an
// index: text many rows hold (a word of every title) is found there at once, where
// the trigram index would have to list every row that holds it before the newest
// could be picked.
const searchWindow = 1000

// SearchTasks returns up to limit tasks whose title or brief contains text
// (case-insensitive), newest first: from the newest searchWindow tasks when they
// hold enough, else through the trigram index (SQLite FTS5 tasks_search, PostgreSQL
// pg_trgm tasks_search_idx, migration 0022). text should have models.MinSearchText
// or more characters: the index finds nothing shorter on SQLite and scans on
// PostgreSQL.
func (o *ops) SearchTasks(ctx context.Context, text string, limit int) ([]models.Task, error) {
	ids, err := o.searchIDs(ctx, "tasks", "brief", text, listLimit(limit))
	if err != nil || len(ids) == 0 {
		return []models.Task{}, err
	}
	var recs []taskRecord
	if err := o.q(ctx).Where("id IN ?", ids).Order("id DESC").Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// SearchGoals is SearchTasks for goals: their title or description contains text.
func (o *ops) SearchGoals(ctx context.Context, text string, limit int) ([]models.Goal, error) {
	ids, err := o.searchIDs(ctx, "goals", "description", text, listLimit(limit))
	if err != nil || len(ids) == 0 {
		return []models.Goal{}, err
	}
	var recs []goalRecord
	if err := o.q(ctx).Where("id IN ?", ids).Order("id DESC").Find(&recs).Error; err != nil {
		return nil, mapError(err, "goals")
	}
	out := make([]models.Goal, 0, len(recs))
	for i := range recs {
		out = append(out, *fromGoalRecord(&recs[i]))
	}
	return out, nil
}

// searchIDs returns the ids, newest first, of up to limit rows of table ("tasks" or
// "goals", with the trigram index <table>_search) whose title or other (its text
// column) contains text: first among the newest searchWindow rows, and through the
// index when they hold fewer than limit. The table and column names are constants
// of the callers, never input.
func (o *ops) searchIDs(ctx context.Context, table, other, text string, limit int) ([]int64, error) {
	like := "ILIKE"
	if o.db.dialect == DialectSQLite {
		like = "LIKE" // case-insensitive for ASCII
	}
	body := "title || ' ' || " + other
	var ids []int64
	recent := "WITH recent AS MATERIALIZED (SELECT id, " + body + " AS body FROM " + table + " ORDER BY id DESC LIMIT ?) " +
		"SELECT id FROM recent WHERE body " + like + " ? ESCAPE '\\' ORDER BY id DESC LIMIT ?"
	if err := o.q(ctx).Raw(recent, searchWindow, likePattern(text), limit).Scan(&ids).Error; err != nil {
		return nil, mapError(err, table)
	}
	if len(ids) >= limit {
		return ids, nil
	}
	ids = nil
	indexed := "SELECT id FROM " + table + " WHERE (" + body + ") ILIKE ? ORDER BY id DESC LIMIT ?"
	args := []any{likePattern(text), limit}
	if o.db.dialect == DialectSQLite {
		indexed = "SELECT rowid FROM " + table + "_search WHERE " + table + "_search MATCH ? ORDER BY rowid DESC LIMIT ?"
		args[0] = ftsPhrase(text)
	}
	if err := o.q(ctx).Raw(indexed, args...).Scan(&ids).Error; err != nil {
		return nil, mapError(err, table)
	}
	return ids, nil
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
