package runner

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestTaskFilesAreWhatItNeeds: a verified no-op task leaves in the data dir its
// workspace, its meta dir, its brief and its log, and nothing else: every new inode
// costs on a busy file system (docs/benchmarks.md), so none is made that the task does
// not need. A task whose worker runs in its agent's workdir gets no workspace of its
// own, and keeps the stamps of what its workdir held before.
func TestTaskFilesAreWhatItNeeds(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("w", "developer", noopCommand)
	h.worker("inplace", "inplace", noopCommand, func(a *models.Agent) { a.Workdir = t.TempDir() })
	var ids []int64
	for range 3 {
		ids = append(ids, h.task("noop", "developer", noopContract()).ID)
	}
	inplace := h.task("in place", "inplace", noopContract()).ID
	h.start()
	for _, id := range append(ids, inplace) {
		h.settled(id, time.Minute)
	}
	root := h.cfg.Workspaces.Root()
	var got []string
	for _, d := range []string{"tasks", "meta"} {
		must(t, filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(root, p)
			if err == nil && rel != d {
				got = append(got, rel)
			}
			return err
		}))
	}
	var want []string
	for _, id := range ids {
		n := strconv.FormatInt(id, 10)
		want = append(want, "tasks/"+n, "meta/"+n, "meta/"+n+"/attempt-1.log", "meta/"+n+"/brief-1.md")
	}
	n := strconv.FormatInt(inplace, 10)
	// The agent's workdir held files before the task: what they were is kept, so that
	// the deliverable is what the task changed.
	want = append(want, "meta/"+n, "meta/"+n+"/attempt-1.log", "meta/"+n+"/brief-1.md", "meta/"+n+"/deliverable-base.json")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the data dir holds, for four no-op tasks:\n%v\nwant:\n%v", got, want)
	}
}
