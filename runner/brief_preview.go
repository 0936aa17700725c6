package runner

import (
	"path/filepath"

	"github.com/countersign/countersign/models"
)

// PreviewBrief returns the brief the runner would give the worker of t's first
// attempt, with the task's workspace at workdir: the same text buildBrief writes to
// the brief file, for the template editor's preview. No workspace is touched.
func PreviewBrief(t *models.Task, workdir string) string {
	out := ""
	if rel := t.Contract.OutputPath(t.ID); rel != "" {
		out = filepath.Join(workdir, filepath.FromSlash(rel))
	}
	return buildBrief(briefInput{task: t, attempt: 1, outputAbs: out})
}
