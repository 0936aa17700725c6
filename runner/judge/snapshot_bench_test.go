package judge

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snap10k lays out a git checkout of 10,000 files (500 directories of 20), committed,
// with an ignored node_modules of 2,000 files the snapshot must not enter.
func snap10k(b *testing.B) (string, string) {
	b.Helper()
	files := map[string]string{".gitignore": "node_modules/\n"}
	for d := 0; d < 500; d++ {
		for f := 0; f < 20; f++ {
			files[fmt.Sprintf("pkg/p%03d/f%02d.go", d, f)] = fmt.Sprintf("package p%03d\n\nfunc F%d() int { return %d }\n", d, f, f)
		}
	}
	dir, c := snapRepo(b, files)
	nm := map[string]string{}
	for i := 0; i < 2000; i++ {
		nm[fmt.Sprintf("node_modules/m%02d/f%03d.js", i/100, i)] = "module.exports = 1\n"
	}
	snapPut(b, dir, nm)
	return dir, c
}

// BenchmarkSnapshot10k measures a candidate snapshot of a 10,000-file checkout in
// which the worker changed one file and added one (every file is hashed from disk:
// the index starts with no stat data, see Store.Snapshot). Its pair,
// BenchmarkGitAddWriteTree10k, is `git add -A` + write-tree of the same change in a
// plain repository with a warm index (stat data trusted), for scale.
func BenchmarkSnapshot10k(b *testing.B) {
	s := snapStore(b)
	ctx := context.Background()
	dir, c := snap10k(b)
	base := snapBase(b, s, dir, c)
	b.ResetTimer()
	cpu := snapCPU()
	for i := 0; i < b.N; i++ {
		snapPut(b, dir, map[string]string{"pkg/p007/f03.go": fmt.Sprintf("package p007 // %d\n", i), "new.go": fmt.Sprint(i)})
		if _, err := s.Snapshot(ctx, SnapshotRequest{Dir: dir, IgnoreFrom: base.Commit, Parent: base.Commit, Exclude: []string{".countersign"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((snapCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// snapCPU is the CPU time this process and its waited-for children used so far: on a
// loaded machine, a steadier figure than the wall clock.
func snapCPU() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	d := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return d(self.Utime) + d(self.Stime) + d(kids.Utime) + d(kids.Stime)
}

// BenchmarkGitAddWriteTree10k is BenchmarkSnapshot10k's pair: see there.
func BenchmarkGitAddWriteTree10k(b *testing.B) {
	snapNeedGit(b)
	dir, _ := snap10k(b)
	sgit(b, dir, "status", "--porcelain") // warm the index's stat data
	b.ResetTimer()
	cpu := snapCPU()
	for i := 0; i < b.N; i++ {
		snapPut(b, dir, map[string]string{"pkg/p007/f03.go": fmt.Sprintf("package p007 // %d\n", i), "new.go": fmt.Sprint(i)})
		sgit(b, dir, "add", "-A")
		sgit(b, dir, "write-tree")
	}
	b.ReportMetric(float64((snapCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkBlob reads 1,000 blobs through Store.Blob (one cat-file --batch kept
// open) and, as a sub-benchmark, with one `git cat-file blob` process each: the
// reason Blob keeps its reader open.
func BenchmarkBlob(b *testing.B) {
	s := snapStore(b)
	ctx := context.Background()
	files := map[string]string{}
	for i := 0; i < 1000; i++ {
		files[fmt.Sprintf("d%02d/f%03d", i/50, i)] = strings.Repeat(fmt.Sprint(i), 100)
	}
	dir := b.TempDir()
	snapPut(b, dir, files)
	snap, err := s.Snapshot(ctx, SnapshotRequest{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := s.Changes(ctx, "", snap.Commit)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("batch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, c := range cs {
				if _, err := s.Blob(ctx, c.NewBlob); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("process-each", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, c := range cs {
				cmd := exec.Command("git", "--git-dir="+s.GitDir(), "cat-file", "blob", c.NewBlob)
				cmd.Env = s.env(nil)
				if _, err := cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
