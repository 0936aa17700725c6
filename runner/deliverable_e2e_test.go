//go:build linux && (amd64 || arm64)

package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// deliverableContract passes when check passes, after one attempt.
func deliverableContract(check string) contract.Contract {
	return contract.Contract{
		Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable,
			Criteria: []contract.Criterion{{Activity: "check", Description: "the files are there", Command: check}}},
	}
}

// TestDeliverableOfTasksWithoutGit: a verified task in a fresh (non-git) workspace
// keeps the files its worker wrote as its deliverable, recorded on the attempt with
// each file's size and SHA-256, and a file that was there before and was not touched
// stays out. The kept copy does not change when the workspace does afterwards. A
// hostile worker's symbolic link to /etc/passwd, link to a directory, FIFO, file with
// a name that is not UTF-8 and file over the size bound are not kept, and nothing
// hangs.
func TestDeliverableOfTasksWithoutGit(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, d, nil)
			h.worker("writer", "writer", `mkdir -p out && printf 'hello\n' > out/a.txt && printf 'two' > b.md && echo TASK_COMPLETE`)
			h.worker("hostile", "hostile", `ln -s /etc/passwd passwd && ln -s /etc etc && mkfifo pipe && `+
				`printf x > "$(printf 'bad\377name')" && head -c 52428801 /dev/zero > big.bin && printf ok > ok.txt && echo TASK_COMPLETE`)
			plain := h.task("Write two files", "writer", deliverableContract(`test -s b.md`))
			hostile := h.task("Plant links", "hostile", deliverableContract(`test -s ok.txt`))
			// A file the task's workspace held before its worker ran.
			wsDir := filepath.Join(h.cfg.Workspaces.Root(), "tasks", itoa(plain.ID))
			writeFiles(t, wsDir, map[string]string{"old.txt": "was here"})
			h.start()

			got := h.settled(plain.ID, 2*time.Minute)
			if got.State != models.TaskVerified {
				t.Fatalf("the plain task: %s; attempts %+v", got.State, h.attempts(plain.ID))
			}
			att := h.attempts(plain.ID)
			dl := att[len(att)-1].Deliverable
			if dl == nil {
				t.Fatalf("the verified attempt keeps no deliverable: %+v", att[len(att)-1])
			}
			if paths := deliverablePaths(dl); !slices.Equal(paths, []string{"b.md", "out/a.txt"}) || dl.Truncated || dl.Omitted != 0 {
				t.Fatalf("deliverable %+v, want b.md and out/a.txt, not truncated", dl)
			}
			files := NewDeliverableFiles(h.cfg.Workspaces.Root())
			for _, f := range dl.Files {
				b := readKept(t, files, plain.ID, att[len(att)-1].Number, f.Path)
				sum := sha256.Sum256(b)
				if hex.EncodeToString(sum[:]) != f.SHA256 || int64(len(b)) != f.Size {
					t.Errorf("%s: kept %d bytes with SHA-256 %x, manifest says %d and %s", f.Path, len(b), sum, f.Size, f.SHA256)
				}
			}
			checkDeliverableAttested(t, h, plain.ID, dl)
			// The worker (or anyone) changes the workspace after verification: the
			// deliverable stays as verified.
			writeFiles(t, wsDir, map[string]string{"b.md": "changed afterwards"})
			if b := readKept(t, files, plain.ID, att[len(att)-1].Number, "b.md"); string(b) != "two" {
				t.Errorf("the kept b.md is %q after the workspace changed, want %q", b, "two")
			}
			// Reads are confined to the manifest's kind of path.
			for _, bad := range []string{"../base.json", "/etc/passwd", "old.txt", "out/../b.md", ""} {
				if _, err := files.Open(h.ctx, plain.ID, att[len(att)-1].Number, bad); models.ErrorCode(err) != models.ENOTFOUND {
					t.Errorf("opening %q: %v, want ENOTFOUND", bad, err)
				}
			}

			got = h.settled(hostile.ID, 2*time.Minute)
			if got.State != models.TaskVerified {
				t.Fatalf("the hostile task: %s; attempts %+v", got.State, h.attempts(hostile.ID))
			}
			att = h.attempts(hostile.ID)
			dl = att[len(att)-1].Deliverable
			if dl == nil {
				t.Fatal("the hostile task's verified attempt keeps no deliverable")
			}
			// The bad name and the big file were seen and left out; links and the FIFO
			// are not regular files and were never candidates.
			if paths := deliverablePaths(dl); !slices.Equal(paths, []string{"ok.txt"}) || !dl.Truncated || dl.Omitted != 2 {
				t.Fatalf("hostile deliverable %+v, want only ok.txt, truncated, 2 omitted", dl)
			}
			for _, a := range h.attempts(hostile.ID) {
				if strings.Contains(a.Diagnosis, "deliverable") {
					t.Errorf("keeping the deliverable reached the verdict: %s", a.Diagnosis)
				}
			}
		})
	}
}

// TestDeliverableKeepFileRefusesWhatIsNotARegularFile: a worker's process that swaps
// a file for a link or a FIFO after the walk gains nothing; keepFile neither follows
// the link nor blocks on the FIFO, and a file that grows past the budget while it is
// copied is not kept.
func TestDeliverableKeepFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir, dst := t.TempDir(), filepath.Join(t.TempDir(), "1")
	writeFiles(t, dir, map[string]string{"sub/real.txt": "real", "big.txt": strings.Repeat("x", 100)})
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "dirlink")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, rel := range []string{"link", "pipe", "dirlink/real.txt", "../" + filepath.Base(dir) + "/sub/real.txt", "missing"} {
			if _, ok, err := keepFile(dir, rel, dst, 1<<20); ok || err != nil {
				t.Errorf("keepFile(%q) = kept %v, err %v; want refused", rel, ok, err)
			}
		}
		if _, ok, err := keepFile(dir, "big.txt", dst, 99); ok || err != nil {
			t.Errorf("a file over the budget: kept %v, err %v", ok, err)
		}
		f, ok, err := keepFile(dir, "sub/real.txt", dst, 4)
		if !ok || err != nil || f.Path != "sub/real.txt" || f.Size != 4 {
			t.Errorf("a regular file: %+v kept %v err %v", f, ok, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("keepFile hangs")
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != 1 || entries[0].Name() != "sub" {
		t.Errorf("refused files left copies behind: %v", entries)
	}
}

func deliverablePaths(d *models.Deliverable) []string {
	var out []string
	for _, f := range d.Files {
		out = append(out, f.Path)
	}
	return out
}

func readKept(t *testing.T, files models.DeliverableStore, task int64, attempt int, path string) []byte {
	t.Helper()
	rc, err := files.Open(context.Background(), task, attempt, path)
	if err != nil {
		t.Fatalf("opening the kept %s: %v", path, err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, rc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
