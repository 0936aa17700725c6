package judge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// goModule200 lays out a Go module of 40 source files in 4 packages, each package
// with a test, committed: a small project whose `go test ./...` is the verify run.
func goModule40(b *testing.B) (dir, commit string) {
	b.Helper()
	files := map[string]string{"go.mod": "module bench\n\ngo 1.21\n", ".gitignore": "build/\n"}
	for p := 0; p < 4; p++ {
		for f := 0; f < 10; f++ {
			files[fmt.Sprintf("p%02d/f%02d.go", p, f)] = fmt.Sprintf("package p%02d\n\n// F%d returns %d.\nfunc F%d() int { return %d }\n", p, f, f, f, f)
		}
		files[fmt.Sprintf("p%02d/f_test.go", p)] = fmt.Sprintf("package p%02d\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {\n\tif F3() != 3 {\n\t\tt.Fatal(F3())\n\t}\n}\n", p)
	}
	return snapRepo(b, files)
}

// BenchmarkJudgedRunOverhead is the judge's whole cost around a verify run, against
// the same run bare: per iteration the worker changes a file, and the judged side
// takes the candidate snapshot, opens the judge's view over the base's Env, runs `go
// test ./...` there and closes the view, while the bare side runs `go test ./...` in
// the workspace itself. Both use one warm Go build cache (-count=1: no test cache), so
// the difference is the judge's. It reports bare-ms, judged-ms, the ratio and the
// judge's added milliseconds (goal: judged ≤ 1.1 × bare + 200 ms).
func BenchmarkJudgedRunOverhead(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go not on PATH")
	}
	ctx := context.Background()
	s := snapStore(b)
	dir, c := goModule40(b)
	base := snapBase(b, s, dir, c)
	root := b.TempDir()
	env, err := PrepareEnv(ctx, dir, root, "bench")
	if err != nil {
		b.Fatal(err)
	}
	cache := b.TempDir()
	goTest := func(in string) time.Duration {
		start := time.Now()
		cmd := exec.Command("go", "test", "-count=1", "./...")
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go test in %s: %v\n%s", in, err, out)
		}
		return time.Since(start)
	}
	goTest(dir) // warm the build cache for both sides
	var bare, judged time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snapPut(b, dir, map[string]string{"p02/f03.go": fmt.Sprintf("package p02\n\n// F3 returns 3 (%d).\nfunc F3() int { return 3 }\n", i)})
		bare += goTest(dir)

		start := time.Now()
		cand, err := s.Snapshot(ctx, SnapshotRequest{Dir: dir, IgnoreFrom: base.Commit, Parent: base.Commit, Exclude: []string{".countersign"}})
		if err != nil {
			b.Fatal(err)
		}
		v, _, err := OpenView(ctx, ViewRequest{Env: env, Dir: filepath.Join(root, "view"), Trees: s, Base: base.Commit, Candidate: cand.Commit,
			Rules: ParseRules([]string{"*_test.go"}), Restore: true})
		if err != nil {
			b.Fatal(err)
		}
		goTest(v.Root())
		if err := v.Close(); err != nil {
			b.Fatal(err)
		}
		judged += time.Since(start)
	}
	n := float64(b.N)
	bareMS, judgedMS := float64(bare.Milliseconds())/n, float64(judged.Milliseconds())/n
	b.ReportMetric(bareMS, "bare-ms")
	b.ReportMetric(judgedMS, "judged-ms")
	b.ReportMetric(judgedMS/bareMS, "ratio")
	b.ReportMetric(judgedMS-bareMS, "added-ms")
}
