package judge

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestExportRunsNothingInTheRepository: the worker wrote receive hooks into the
// repository. Export makes the candidate's objects readable there without running
// them; the control pushes the same commit from the store, as the alternative design
// would, and the hook runs.
func TestExportRunsNothingInTheRepository(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	repo, c := snapRepo(t, map[string]string{"a": "a\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{"b": "worker's\n"})
	cand := snapCandidate(t, s, repo, base)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	for _, h := range []string{"pre-receive", "post-receive", "update", "reference-transaction"} {
		snapPut(t, repo, map[string]string{".git/hooks/" + h: "#!/bin/sh\ntouch " + marker + "\n"})
		os.Chmod(filepath.Join(repo, ".git", "hooks", h), 0o755)
	}
	sgit(t, repo, "config", "url./nonexistent/.insteadOf", s.GitDir())

	if err := s.Export(ctx, repo, cand.Commit); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Export ran a hook of the repository")
	}
	if got := sgit(t, repo, "show", cand.Commit+":b"); got != "worker's" {
		t.Fatalf("exported candidate reads %q in the repository", got)
	}
	if got := sgit(t, repo, "rev-parse", cand.Commit+"^{tree}"); got != cand.Tree {
		t.Fatalf("tree %s, want %s", got, cand.Tree)
	}
	sgit(t, repo, "fsck", "--no-dangling") // the repository is consistent
	// Again: nothing new, nothing broken.
	if err := s.Export(ctx, repo, cand.Commit); err != nil {
		t.Fatal(err)
	}

	// Control: a push from the store runs the repository's hooks.
	if out, err := sgitErr(repo, nil, "--git-dir="+s.GitDir(), "push", "-q", repo, cand.Commit+":refs/countersign/landing"); err != nil {
		t.Logf("push: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a push did not run the hook, so this test proves nothing")
	}
}

// TestExportRefusesLinkedObjectDir: the worker replaced the repository's objects/pack
// with a link to a directory of its choosing. Export refuses rather than write
// through it; with the refusal switched off, the pack lands in the link's target.
func TestExportRefusesLinkedObjectDir(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	repo, c := snapRepo(t, map[string]string{"a": "a\n"})
	base := snapBase(t, s, repo, c)
	snapPut(t, repo, map[string]string{"b": "b\n"})
	cand := snapCandidate(t, s, repo, base)
	elsewhere := t.TempDir()
	packDir := filepath.Join(repo, ".git", "objects", "pack")
	if err := os.RemoveAll(packDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, packDir); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, repo, cand.Commit); err == nil {
		t.Fatal("Export wrote through a link")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("files written through the link: %v", ents)
	}
	snapSwitchOff(t, &followPackLinks)
	if err := s.Export(ctx, repo, cand.Commit); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) == 0 {
		t.Fatal("with links followed, the pack should have landed in the link's target")
	}
}

// TestImportIgnoresRepositoryHooks: the repository's config names a pack-objects
// hook; upload-pack, which serves the store's fetch, ignores it from a repository's
// config. The control sets the same hook in a global config, where git honours it.
func TestImportIgnoresRepositoryHooks(t *testing.T) {
	s := snapStore(t)
	ctx := context.Background()
	repo, c := snapRepo(t, map[string]string{"a": "a\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sgit(t, repo, "config", "uploadpack.packObjectsHook", hook)
	sgit(t, repo, "config", "core.fsmonitor", "touch "+marker)
	if err := s.Import(ctx, repo, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("importing ran a command from the repository's config")
	}
	if err := s.Import(ctx, repo, c); err != nil { // already there
		t.Fatal(err)
	}

	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, []byte("[uploadpack]\n\tpackObjectsHook = "+hook+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	sgit(t, other, "init", "-q", "--bare")
	if out, err := sgitErr(other, []string{"GIT_CONFIG_GLOBAL=" + global}, "fetch", "-q", repo, c+":refs/x"); err != nil {
		t.Fatalf("control fetch: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: the hook from a global config did not run, so this test proves nothing")
	}
}
