package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repo10k lays out a repository of 10,000 files: 500 packages of 20 files, one in
// five a test file, and a node_modules tree the judge does not walk.
func repo10k(b *testing.B) string {
	root := b.TempDir()
	for d := 0; d < 500; d++ {
		dir := filepath.Join(root, "pkg", fmt.Sprintf("p%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 20; f++ {
			name := fmt.Sprintf("f%02d.go", f)
			if f%5 == 0 {
				name = fmt.Sprintf("f%02d_test.go", f)
			}
			body := fmt.Sprintf("package p%03d\n\n// file %d\nfunc F%d() int { return %d }\n", d, f, f, f)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTimeAll is cpuTime plus the CPU time of the child processes waited for so far.
func cpuTimeAll() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return cpuTime() + time.Duration(ru.Utime.Nano()+ru.Stime.Nano())
}

// fixture10k is a git workspace of 10,000 tracked files (repo10k's layout) with an
// ignored node_modules of 50,000 files, its Env, and a candidate commit that changes
// a handful of files, one of them a protected test.
type fixture10k struct {
	repo, env, meta string
	base, cand      string
	envMS           float64
}

func build10k(b *testing.B) *fixture10k {
	b.Helper()
	start := time.Now()
	fx := &fixture10k{repo: repo10k(b), meta: b.TempDir()}
	for d := 0; d < 500; d++ {
		dir := filepath.Join(fx.repo, "node_modules", fmt.Sprintf("dep%03d", d), "lib")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			body := fmt.Sprintf("module.exports = %d // dep %d\n", f, d)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.js", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	writeFiles(b, fx.repo, map[string]string{".gitignore": "node_modules/\n"})
	gitRun(b, fx.repo, "init", "-q")
	fx.base = commitAll(b, fx.repo, "base")
	b.Logf("fixture: %d tracked files, %d under node_modules, in %v", 10001, 50000, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	env, err := PrepareEnv(context.Background(), fx.repo, fx.meta, "bench")
	if err != nil {
		b.Fatal(err)
	}
	fx.env, fx.envMS = env, float64(time.Since(start).Microseconds())/1000
	writeFiles(b, fx.repo, map[string]string{
		"pkg/p001/f01.go":      "package p001\n\nfunc F1() int { return 42 }\n",
		"pkg/p250/f02.go":      "package p250\n\nfunc F2() int { return 43 }\n",
		"pkg/p499/new.go":      "package p499\n",
		"pkg/p100/f00_test.go": "package p100\n\nfunc TestMain() {}\n",
	})
	if err := os.Remove(filepath.Join(fx.repo, "pkg/p300/f03.go")); err != nil {
		b.Fatal(err)
	}
	fx.cand = commitAll(b, fx.repo, "candidate")
	return fx
}

// BenchmarkJudgeView10k measures the judge's view of a candidate of a 10,000-file
// repository whose Env holds a 50,000-file node_modules (open and close, with the
// candidate's five changes read from git and a held-out test added), beside `git
// worktree add` and `git worktree remove` of the same commit, in the same loop. Goal:
// the view at most 0.2 s. Sub-benchmarks: overlay (the runner may mount) and copy
// (the fallback where it may not). The fixture and its Env are built once.
func BenchmarkJudgeView10k(b *testing.B) {
	fx := build10k(b)
	b.Run("overlay", func(b *testing.B) { canMount(b); benchView(b, fx, false) })
	b.Run("copy", func(b *testing.B) { benchView(b, fx, true) })
}

func benchView(b *testing.B, fx *fixture10k, noMount bool) {
	req := ViewRequest{Env: fx.env, Dir: filepath.Join(fx.meta, "meta", "1", "judge", "view"), Trees: gitTrees{fx.repo},
		Base: fx.base, Candidate: fx.cand, Rules: goRules, Restore: true, NoMount: noMount,
		Extra: []File{{Rel: "pkg/p001/held_test.go", Content: []byte("package p001\n")}}}
	wt := filepath.Join(fx.meta, "wt")
	var open, view, worktree, viewCPU, worktreeCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpuTimeAll()
		t0 := time.Now()
		v, changes, err := OpenView(context.Background(), req)
		if err != nil || len(changes) != 1 {
			b.Fatalf("%v %v", changes, err)
		}
		t1 := time.Now()
		if got := readFile(b, filepath.Join(v.Root(), "pkg/p001/f01.go")); !strings.Contains(got, "42") {
			b.Fatalf("the view lacks the candidate's change: %q", got)
		}
		if err := v.Close(); err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), cpuTimeAll()
		gitRun(b, fx.repo, "worktree", "add", "-q", "--detach", wt, fx.cand)
		gitRun(b, fx.repo, "worktree", "remove", "--force", wt)
		open, view, worktree = open+t1.Sub(t0), view+t2.Sub(t0), worktree+time.Since(t2)
		viewCPU, worktreeCPU = viewCPU+c2-c0, worktreeCPU+cpuTimeAll()-c2
	}
	n := float64(b.N)
	// The view's cost does not grow with the Env: a view of this one that takes a
	// second is a regression (copying the Env, walking it), whatever the load.
	if !noMount && view > time.Duration(b.N)*time.Second {
		b.Errorf("the view took %v a time, want well under a second (goal 0.2 s)", view/time.Duration(b.N))
	}
	b.ReportMetric(float64(open.Microseconds())/1000/n, "open-ms")
	b.ReportMetric(float64(view.Microseconds())/1000/n, "view-ms")
	b.ReportMetric(float64(worktree.Microseconds())/1000/n, "worktree-ms")
	b.ReportMetric(float64(view)/float64(worktree), "view/worktree")
	// CPU time (user and system, the git processes included): what each costs
	// whatever else the machine is doing; wall time on a loaded machine adds waiting.
	b.ReportMetric(float64(viewCPU.Microseconds())/1000/n, "view-cpu-ms")
	b.ReportMetric(float64(worktreeCPU.Microseconds())/1000/n, "worktree-cpu-ms")
	b.ReportMetric(fx.envMS, "env-once-ms")
}
