package judge

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// BenchmarkJudgeView measures preparing the judge's view of a 10,000-file repository
// (2,000 of them protected test files) in which the worker changed three test files:
// walk, compare, restore and put back (Open + Close), with the base taken once. Goal:
// at most 50 ms. BenchmarkVerifyGoTest beside it is the cost of the verify run it
// precedes, for scale.
func BenchmarkJudgeView(b *testing.B) {
	root := repo10k(b)
	meta := b.TempDir()
	start := time.Now()
	base, err := TakeBase(filepath.Join(meta, "base"), root, "snapshot", goRules)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "base-ms")
	for _, p := range []string{"pkg/p001/f00_test.go", "pkg/p250/f05_test.go", "pkg/p499/f10_test.go"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte("package x\nfunc TestMain() {}\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, changes, err := Open(root, base, goRules, Options{Restore: true, Journal: filepath.Join(meta, "journal")})
		if err != nil || len(changes) != 3 {
			b.Fatalf("%d changes, %v", len(changes), err)
		}
		if err := v.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "view-ms")
	// CPU time (user and system) per view: what the view costs whatever else the
	// machine is doing; wall time on a loaded machine adds waiting.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "view-cpu-ms")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkVerifyGoTest is one verify run of a small Go module (go test -count=1,
// warm build cache): what the judge's view is prepared for.
func BenchmarkVerifyGoTest(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{
		"go.mod":       "module calc\n\ngo 1.21\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal()\n\t}\n}\n",
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	run := func() {
		cmd := exec.Command("go", "test", "-count=1", "./...")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	run() // warm the build cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "verify-ms")
}
