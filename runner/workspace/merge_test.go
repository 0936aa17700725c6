package workspace

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// Verified work lands on the target: fast-forwarded when checked out nowhere, with the
// checkout's files when it is the main working tree's branch, and with a merge commit
// when asked or when the target moved.
func TestMergeLandsVerifiedWork(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()

	// main is checked out in the person's checkout: its files move with it.
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\ntwo\nthree\nfour\n")
	c := commitVerified(t, m, ws)
	before := gitT(t, repo, "rev-parse", "main")
	res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FastForward || !res.CheckedOut || res.Commit != c || res.Previous != before || gitT(t, repo, "rev-parse", "main") != c {
		t.Fatalf("result %+v; main at %s", res, gitT(t, repo, "rev-parse", "main"))
	}
	if _, err := gitTry(repo, "merge-base", "--is-ancestor", c, "main"); err != nil {
		t.Fatal("the verified commit is not reachable from main")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("the checkout's files did not move: %q", b)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout is not clean: %s", st)
	}
	// Again: nothing to do.
	if res, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); err != nil || !res.UpToDate {
		t.Fatalf("second merge: %+v %v", res, err)
	}

	// A target checked out nowhere moves by itself; the checkout is not touched.
	gitT(t, repo, "branch", "release", "main")
	ws2 := branchTask(t, m, repo, 2, "release")
	write(t, filepath.Join(ws2.Dir, "r.txt"), "release note\n")
	c2 := commitVerified(t, m, ws2)
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws2.Branch(), Verified: c2, FastForward: true})
	if err != nil || !res.FastForward || res.CheckedOut || gitT(t, repo, "rev-parse", "release") != c2 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "r.txt")); !os.IsNotExist(err) {
		t.Fatal("merging into release changed the checkout of main")
	}

	// No fast-forward asked: a merge commit whose second parent is the verified one.
	ws3 := branchTask(t, m, repo, 3, "release")
	write(t, filepath.Join(ws3.Dir, "s.txt"), "s\n")
	c3 := commitVerified(t, m, ws3)
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws3.Branch(), Verified: c3, FastForward: false})
	if err != nil || res.FastForward {
		t.Fatalf("no-ff: %+v %v", res, err)
	}
	if parents := gitT(t, repo, "log", "-1", "--format=%P|%s|%an", "release"); parents != c2+" "+c3+"|Merge branch 'countersign/task-3' into release|Countersign" {
		t.Fatalf("merge commit: %s", parents)
	}

	// The target moved since the branch left it: a merge commit even with FastForward.
	ws4 := branchTask(t, m, repo, 4, "release")
	write(t, filepath.Join(ws4.Dir, "t.txt"), "t\n")
	c4 := commitVerified(t, m, ws4)
	ws5 := branchTask(t, m, repo, 5, "release")
	write(t, filepath.Join(ws5.Dir, "u.txt"), "u\n")
	c5 := commitVerified(t, m, ws5)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws4.Branch(), Verified: c4, FastForward: true}); err != nil {
		t.Fatal(err)
	}
	res, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: ws5.Branch(), Verified: c5, FastForward: true})
	if err != nil || res.FastForward {
		t.Fatalf("diverged: %+v %v", res, err)
	}
	for _, f := range []string{"r.txt", "s.txt", "t.txt", "u.txt"} {
		if _, err := gitTry(repo, "cat-file", "-e", "release:"+f); err != nil {
			t.Errorf("release lacks %s", f)
		}
	}
}

// A commit added to the branch after verification stops the merge; the target stays.
func TestMergeRefusesChangesAfterVerification(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nverified\nthree\n")
	c := commitVerified(t, m, ws)
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nsneaked in\nthree\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "after verification")
	before := gitT(t, repo, "rev-parse", "main")
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	var nv *NotVerifiedError
	if !errors.As(err, &nv) || !errors.Is(err, ErrNotVerified) || nv.Tip == c {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("the checkout changed: %q", b)
	}

	// History rewritten to the same files, without the verified commit: refused too.
	gitT(t, ws.Dir, "reset", "-q", "--hard", "main")
	write(t, filepath.Join(ws.Dir, "f.txt"), "one\nverified\nthree\n")
	gitT(t, ws.Dir, "commit", "-q", "-am", "same files, other history")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("rewritten history: %v", err)
	}
	// An empty commit after verification keeps the files: it may land.
	gitT(t, ws.Dir, "reset", "-q", "--hard", c)
	gitT(t, ws.Dir, "commit", "-q", "--allow-empty", "-m", "a note")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true}); err != nil {
		t.Fatalf("same files after verification: %v", err)
	}
}

// Two tasks change the same line: the second merge is a conflict naming the file, with
// the conflicting lines, and the target stays where the first merge left it.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	gitT(t, repo, "branch", "release", "main")
	a, b := branchTask(t, m, repo, 1, "release"), branchTask(t, m, repo, 2, "release")
	write(t, filepath.Join(a.Dir, "f.txt"), "one\nA\nthree\n")
	write(t, filepath.Join(b.Dir, "f.txt"), "one\nB\nthree\n")
	ca, cb := commitVerified(t, m, a), commitVerified(t, m, b)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: a.Branch(), Verified: ca, FastForward: true}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "release", Branch: b.Branch(), Verified: cb, FastForward: true})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Files) != 1 || ce.Files[0].Path != "f.txt" {
		t.Fatalf("err = %v (%+v)", err, ce)
	}
	if h := ce.Files[0].Hunks; !strings.Contains(h, "<<<<<<< ") || !strings.Contains(h, "\nA\n") || !strings.Contains(h, "\nB\n") || strings.Contains(h, "three") {
		t.Fatalf("hunks:\n%s", h)
	}
	if got := gitT(t, repo, "rev-parse", "release"); got != ca {
		t.Fatalf("release moved to %s", got)
	}
	// The same conflict into the checked-out main leaves the checkout untouched.
	gitT(t, repo, "merge", "-q", "--ff-only", "release")
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: b.Branch(), Verified: cb, FastForward: true}); !errors.As(err, &ce) {
		t.Fatalf("into main: %v", err)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout was left mid-merge: %s", st)
	}
}

// A checked-out target with uncommitted changes is not touched.
func TestMergeIntoDirtyCheckoutRefused(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	write(t, filepath.Join(ws.Dir, "g.txt"), "g\n")
	c := commitVerified(t, m, ws)
	write(t, filepath.Join(repo, "f.txt"), "a person's unsaved work\n")
	before := gitT(t, repo, "rev-parse", "main")
	_, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if models.ErrorCode(err) != models.ECONFLICT || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != "a person's unsaved work\n" {
		t.Fatal("the person's change was lost")
	}
	// Checked out in another worktree: refused as well.
	other := filepath.Join(t.TempDir(), "other")
	gitT(t, repo, "worktree", "add", "-q", "-b", "side", other, "main")
	ws2 := branchTask(t, m, repo, 2, "side")
	write(t, filepath.Join(ws2.Dir, "h.txt"), "h\n")
	c2 := commitVerified(t, m, ws2)
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "side", Branch: ws2.Branch(), Verified: c2, FastForward: true}); models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("target in another worktree: %v", err)
	}
}

// The object store is the worker's to write: content planted under the id of a file
// the worker wrote would be what lands. Merge hashes what it brings in and refuses.
func TestMergeRefusesPlantedObject(t *testing.T) {
	t.Parallel()
	m, repo, ctx := newManager(t), mainRepo(t), context.Background()
	ws := branchTask(t, m, repo, 1, "main")
	good := "verified content\n"
	id := fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(good), good))))
	// The worker plants a loose object under that id before it writes the file.
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	evil := "evil content!!!!\n"
	fmt.Fprintf(zw, "blob %d\x00%s", len(evil), evil)
	zw.Close()
	write(t, filepath.Join(repo, ".git", "objects", id[:2], id[2:]), z.String())
	write(t, filepath.Join(ws.Dir, "g.txt"), good)
	// Merge's check is the backstop for a commit made in the repository by any other
	// means: here the tree `git add -A` writes there (WorktreeTree), which keeps the
	// planted object because its id is already present.
	tree, err := m.WorktreeTree(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	info := verifiedInfo(1, 1)
	info.Tree = tree
	c, err := m.CommitVerified(ctx, ws, info)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "show", c+":g.txt"); got+"\n" != evil {
		t.Fatalf("control: git reads %q for the planted id, so this test could not fail", got)
	}
	before := gitT(t, repo, "rev-parse", "main")
	_, err = m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws.Branch(), Verified: c, FastForward: true})
	if !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), id[:12]) {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, repo, "rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if _, err := os.Stat(filepath.Join(repo, "g.txt")); !os.IsNotExist(err) {
		t.Fatal("the planted content reached the checkout")
	}

	// Landed through the judge's snapshot, the planted object changes nothing: the
	// exported pack holds the verified content, and git reads packs before loose
	// objects.
	ws2 := branchTask(t, m, repo, 2, "main")
	write(t, filepath.Join(ws2.Dir, "g.txt"), good)
	c2 := commitVerified(t, m, ws2)
	if got := gitT(t, repo, "show", c2+":g.txt"); got+"\n" != good {
		t.Fatalf("the snapshot's landing reads %q", got)
	}
	if _, err := m.Merge(ctx, MergeRequest{Repo: repo, Target: "main", Branch: ws2.Branch(), Verified: c2, FastForward: true}); err != nil {
		t.Fatalf("the snapshot's landing was refused: %v", err)
	}
}
