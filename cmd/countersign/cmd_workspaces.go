package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/workspace"
	"github.com/countersign/countersign/web/components"
)

// runWorkspacesPrune removes the git worktrees no open task needs: those of verified
// and cancelled tasks, and of tasks that no longer exist. A verified task's branch
// stays in its repository, so its commit can still be merged; briefs and logs stay.
func runWorkspacesPrune(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("workspaces prune", "workspaces prune [flags]", out)
	storeFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	ws, err := workspace.New(filepath.Join(c.DataDir, "work"))
	if err != nil {
		return err
	}
	// git reads repositories workers wrote to: confined where the kernel can.
	if sb := sandbox.Probe(sandbox.ModeOn); sb.Ready() {
		ws.Confine(sb.Protect(c.DataDir))
	}
	before, _ := ws.DiskUsage()
	removed, err := ws.Prune(ctx, func(id int64) bool {
		t, err := db.GetTask(ctx, id)
		switch {
		case models.ErrorCode(err) == models.ENOTFOUND:
			return false
		case err != nil:
			return true // in doubt, keep
		}
		return t.State != models.TaskVerified && t.State != models.TaskCancelled
	})
	for _, dir := range removed {
		fmt.Fprintln(out, "removed", dir)
	}
	after, _ := ws.DiskUsage()
	fmt.Fprintf(out, "%d worktree(s) removed; workspaces use %s (were %s)\n", len(removed), components.Bytes(after), components.Bytes(before))
	return err
}
