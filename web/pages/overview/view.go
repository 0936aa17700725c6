package overview

import (
	"strconv"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/queue"
)

// View is the overview's model.
type View struct {
	Meta layout.PageMeta
	// Queue is what waits on the signed-in person; the page starts with its top.
	Queue      queue.List
	Tasks      []Tile // one per task state
	Goals      []Tile // one per goal state
	TotalTasks int
	Inbox      int
	Pool       []Worker
	Feed       []components.FeedItem
	// SpentToday is what attempts started today (UTC) used, in words.
	SpentToday string
}

// Tile is a count with the list it links to.
type Tile struct {
	Label string
	State string
	Count int
	Href  string
}

// Worker is one worker agent of the runner pool.
type Worker struct {
	Name        string
	Roles       string
	Status      string // busy | idle | disabled
	Concurrency int
	Tasks       []TaskRef // what it works on now
}

// TaskRef names a task.
type TaskRef struct {
	ID    int64
	Title string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func status(s string) string {
	switch s {
	case "busy":
		return "in_progress"
	case "idle":
		return "pending"
	}
	return "cancelled"
}
