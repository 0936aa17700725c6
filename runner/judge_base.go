package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/workspace"
)

// The judge judges a commit, never a directory the worker can still touch. Before the
// first worker runs, the task's base is fixed as a snapshot in the judge's own object
// store (<data>/judge/git) and, when the contract runs commands, a judge-owned copy of
// the workspace as it stands then, dependency trees and caches included, becomes the
// base's Env. Once the worker's processes are all gone its result is fixed as the
// attempt's candidate snapshot (the base's ignore rules, never the worker's; the
// output file whatever they say). Every check after that judges the candidate, in a
// view built from the Env and the candidate's tree; a verified task lands exactly
// that tree.

// judgeBase is what the judge keeps of a task's base across attempts and restarts,
// in <meta>/judge/snapshot.json, out of every worker's reach.
type judgeBase struct {
	Commit string `json:"commit"` // the base snapshot in the judge's store
	Tree   string `json:"tree"`
	// Revision is the workspace's git commit when the base was taken, or "snapshot".
	Revision string `json:"revision"`
	// Clean says the workspace was exactly Revision then: base results may be shared.
	Clean bool `json:"clean,omitempty"`
	// Env is the base's environment; "" when the contract runs no commands.
	Env string `json:"env,omitempty"`
}

// snapshotRef names a snapshot of a task in the judge's store, which keeps it alive.
func snapshotRef(taskID int64, name string) string {
	return "refs/countersign/tasks/" + strconv.FormatInt(taskID, 10) + "/" + name
}

// judgeBaseOf loads the task's base, or takes it now: before the first worker runs,
// or, for a task begun under a version without snapshots, from what its earlier
// attempts left. first says it was taken now. withEnv makes sure the base has an Env.
func (p *judging) judgeBaseOf(ctx context.Context, tr *taskRun, ar *attemptRun, withEnv bool) (judgeBase, bool, error) {
	file := filepath.Join(judgeDir(ar), "snapshot.json")
	var jb judgeBase
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &jb) == nil && jb.Commit != "" {
		if withEnv && jb.Env == "" {
			return jb, false, errors.New("the judge's base has no environment (the task's contract changed to run commands after its first attempt)")
		}
		if jb.Env != "" {
			if st, err := os.Stat(jb.Env); err != nil || !st.IsDir() {
				return jb, false, fmt.Errorf("the judge's environment of the task's base is gone (%s): it cannot be rebuilt from a workspace the worker has written", jb.Env)
			}
		}
		return jb, false, nil
	}
	commit, clean, err := p.cfg.Workspaces.Revision(ctx, ar.ws)
	if err != nil {
		return jb, false, err
	}
	jb = judgeBase{Revision: "snapshot", Clean: clean}
	parent := ""
	if commit != "" {
		jb.Revision = commit
		repo := ar.ws.Repo()
		if repo == "" {
			repo = ar.ws.Dir
		}
		if err := p.judgeStore.Import(ctx, repo, commit); err != nil {
			// A checkout git can name but not serve (a worktree of a repository with
			// no .git directory): the base is its files, without history.
			p.log.Warn("the judge could not import the workspace's commit; the base is a snapshot without it",
				"task_id", tr.task.ID, "commit", commit, "err", err)
		} else {
			parent = commit
		}
	}
	snap, err := p.judgeStore.Snapshot(ctx, judge.SnapshotRequest{Dir: ar.ws.Dir, Parent: parent,
		Exclude: []string{workspace.MetaDirName}, Ref: snapshotRef(tr.task.ID, "base"),
		Message: fmt.Sprintf("base of task %d", tr.task.ID)})
	if err != nil {
		return jb, false, fmt.Errorf("taking the base snapshot: %w", err)
	}
	jb.Commit, jb.Tree = snap.Commit, snap.Tree
	if withEnv {
		if jb.Env, err = p.prepareEnv(ctx, ar.ws.Dir, snap.Tree); err != nil {
			return jb, false, err
		}
	}
	b, err := json.Marshal(jb)
	if err != nil {
		return jb, false, err
	}
	return jb, true, writeAtomic(file, b)
}

// prepareEnv makes (or finds) the Env of a base whose tree is tree from the workspace
// at dir before any worker ran. Tasks on one tree with the same ignored files (their
// names, sizes and times) share one.
func (p *judging) prepareEnv(ctx context.Context, dir, tree string) (string, error) {
	ignored, err := p.judgeStore.Ignored(ctx, dir, workspace.MetaDirName)
	if err != nil {
		return "", fmt.Errorf("listing the base's ignored files: %w", err)
	}
	key, err := judge.EnvKey(tree, dir, ignored)
	if err != nil {
		return "", err
	}
	env, err := judge.PrepareEnv(ctx, dir, p.cfg.Workspaces.Root(), key, workspace.MetaDirName)
	if err != nil {
		return "", fmt.Errorf("preparing the judge's environment: %w", err)
	}
	return env, nil
}

// takeCandidate fixes the attempt's result as its candidate snapshot, once every
// process of the worker is gone: the workspace's files under the base's ignore rules,
// the output file whatever they say. It reports whether checking may go on; failing to
// take it is the runner's failure.
func (p *judging) takeCandidate(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	jr := ar.judge
	if jr == nil || jr.cand != nil {
		return true
	}
	var force []string
	if ar.outAbs != "" {
		if rel, err := filepath.Rel(ar.ws.Dir, ar.outAbs); err == nil && filepath.IsLocal(rel) {
			force = append(force, filepath.ToSlash(rel))
		}
	}
	snap, err := p.judgeStore.Snapshot(ctx, judge.SnapshotRequest{Dir: ar.ws.Dir, IgnoreFrom: jr.base.Commit,
		Parent: jr.base.Commit, Force: force, Exclude: []string{workspace.MetaDirName},
		Ref:     snapshotRef(tr.task.ID, "attempt-"+strconv.Itoa(ar.num)),
		Message: fmt.Sprintf("task %d, attempt %d", tr.task.ID, ar.num)})
	if err != nil {
		ar.infra("fixing the worker's result as a candidate commit failed: "+err.Error(), err)
		return false
	}
	jr.cand = &snap
	jr.report.Tree = snap.Tree
	if len(snap.Skipped) > 0 {
		p.log.Info("the candidate leaves out nested repositories", "task_id", tr.task.ID, "dirs", snap.Skipped)
	}
	return true
}

// landedTree is the tree a verified attempt lands: the candidate's.
func landedTree(ar *attemptRun) (commit, tree string) {
	if ar.judge == nil || ar.judge.cand == nil {
		return "", ""
	}
	return ar.judge.cand.Commit, ar.judge.cand.Tree
}

// judged is the attempt's judge report, for the attempt and the ledger: nil when the
// judge neither took a candidate nor opened a view.
func (jr *judgeRun) judged() *models.JudgeReport {
	if jr == nil || (!jr.opened && jr.cand == nil) {
		return nil
	}
	return &jr.report
}

// viewGit gives the judge's view at root a git repository of the judge's making
// (judge.Store.ViewGit): HEAD is the candidate's tree on top of the worker's HEAD,
// imported into the judge's store (every object checked), so history checks see the
// worker's merges and commits; a workspace that is no checkout, or whose HEAD cannot
// be imported, gets the base snapshot as HEAD's parent.
func (p *judging) viewGit(ctx context.Context, ar *attemptRun, root string) error {
	jr := ar.judge
	parent, repo := jr.base.Commit, ""
	if head := p.cfg.Workspaces.Head(ctx, ar.ws); head != "" {
		repo = ar.ws.Repo()
		if repo == "" {
			repo = ar.ws.Dir
		}
		if err := p.judgeStore.Import(ctx, repo, head); err != nil {
			p.log.Warn("the judge could not import the worker's HEAD; the view's HEAD follows the base", "head", head, "err", err)
			repo = ""
		} else {
			parent = head
		}
	}
	_, err := p.judgeStore.ViewGit(ctx, judge.GitRequest{Root: root, GitDir: filepath.Join(jr.dir, "view-git"),
		Tree: jr.cand.Tree, Parent: parent, Repo: repo})
	return err
}
