package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/countersign/countersign/runner/drift"
)

// runRecheck compares verified tasks' workspaces with what their verification covered
// (their fingerprints) and marks the tasks whose work changed stale, as the runner. It
// prints one line a task and fails when any task is stale, so a script can gate on it.
func runRecheck(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("recheck", "recheck [--task ID | --goal ID] [flags]", out)
	storeFlags(fs, &c)
	taskID := fs.Int64("task", 0, "recheck this task only")
	goalID := fs.Int64("goal", 0, "recheck the verified tasks of this goal only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *taskID < 0 || *goalID < 0 || (*taskID != 0 && *goalID != 0) {
		return errors.New("recheck takes --task ID or --goal ID (positive), not both")
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := newService(db)
	runner, err := svc.Agents.RunnerAgent(ctx)
	if err != nil {
		return err
	}
	rc := drift.NewRechecker(svc.Store(), svc.Tasks, 0, nil)
	var results []drift.Result
	if *taskID != 0 {
		var r drift.Result
		r, err = rc.Task(ctx, runner, *taskID)
		results = append(results, r)
	} else {
		results, err = rc.Tasks(ctx, runner, *goalID)
	}
	stale := 0
	for _, r := range results {
		fmt.Fprintln(out, r)
		if len(r.Changed) > 0 {
			stale++
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d task(s) rechecked, %d stale\n", len(results), stale)
	if stale > 0 {
		return fmt.Errorf("%d verified task(s) changed since verification; a lead reopens each to revoke it (reason drift)", stale)
	}
	return nil
}
