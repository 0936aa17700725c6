#!/bin/sh
# Regenerates the go-test-json fixtures in $OUT (default: the testdata directory).
# Each case is a tiny module "example.com/calc" in a temporary directory; the
# fixtures were made with go1.26.8 linux/amd64 by running this script.
set -u
OUT=${OUT:-$(cd "$(dirname "$0")/.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mk() { mkdir -p "$WORK/$1"; cd "$WORK/$1"; printf 'module example.com/calc\n\ngo 1.22\n' > go.mod; }
base_code() { printf 'package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n' > calc.go; }
base_test() { cat > calc_test.go <<'T'
package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		a, b, w int
	}{{"zero", 0, 0, 0}, {"two plus three", 2, 3, 5}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := Add(c.a, c.b); got != c.w {
				t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.w)
			}
		})
	}
}
T
}
# mixed: a wrong Add; pass, fail, skip, parallel subtests, parallel tests, two packages
mk mixed; printf 'package calc\n\n// Add is wrong on purpose.\nfunc Add(a, b int) int { return a - b }\n' > calc.go; base_test
cat >> calc_test.go <<'T'

func TestSub(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("zero")
	}
}

func TestSkipped(t *testing.T) { t.Skip("flaky on CI") }

func TestParallelA(t *testing.T) { t.Parallel(); t.Log("a") }
func TestParallelB(t *testing.T) { t.Parallel(); t.Log("b") }
T
mkdir sub; printf 'package sub\n\nimport "testing"\n\nfunc TestInSub(t *testing.T) {}\n' > sub/sub_test.go
go test -json ./... > $OUT/go-mixed.json
# base: everything passes
mk base; base_code; base_test; go test -json ./... > $OUT/go-base.json
# skip: the worker put t.Skip at the top of TestAdd
mk skip; base_code; base_test; sed -i 's/^func TestAdd(t \*testing.T) {$/&\n\tt.Skip("flaky on CI")/' calc_test.go; go test -json ./... > $OUT/go-skip.json
# deleted: the worker deleted calc_test.go
mk deleted; base_code; go test -json ./... > $OUT/go-deleted.json
# testmain: a TestMain that exits 0 without running anything
mk testmain; base_code; base_test; printf 'package calc\n\nimport (\n\t"os"\n\t"testing"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n' > zz_main_test.go; go test -json ./... > $OUT/go-testmain-exit0.json
# exitmid: a test calls os.Exit(0) half way, so later tests never run
mk exitmid; base_code; base_test; printf 'package calc\n\nimport (\n\t"os"\n\t"testing"\n)\n\nfunc TestA0Exit(t *testing.T) { os.Exit(0) }\n' > a0_test.go; go test -json ./... > $OUT/go-exit-mid-test.json
# panic: a subtest panics
mk panic; base_code; base_test; printf 'package calc\n\nimport "testing"\n\nfunc TestBoom(t *testing.T) {\n\tt.Run("inner", func(t *testing.T) { var m map[string]int; m["x"] = 1 })\n}\n' > boom_test.go; go test -json ./... > $OUT/go-panic.json
# buildfail: the test file does not compile
mk buildfail; base_code; base_test; printf 'package calc\n\nfunc broken() { undefined() }\n' > broken_test.go; go test -json ./... > $OUT/go-build-fail.json 2>/dev/null

# syscall-exit: a test leaves through syscall.Exit(0), which the testing package cannot see: "run" with no end
mk sysexit; base_code; base_test; printf 'package calc\n\nimport (\n\t"syscall"\n\t"testing"\n)\n\nfunc TestA0Exit(t *testing.T) { syscall.Exit(0) }\n' > a0_test.go; go test -json ./... > $OUT/go-syscall-exit.json
# goroutine-panic: a goroutine started by a test panics, killing the binary while subtests are paused
mk gopanic; base_code; base_test; printf 'package calc\n\nimport (\n\t"testing"\n\t"time"\n)\n\nfunc TestZGo(t *testing.T) {\n\tt.Run("p", func(t *testing.T) { t.Parallel(); go func() { panic("from a goroutine") }(); time.Sleep(time.Second) })\n\tt.Run("q", func(t *testing.T) { t.Parallel(); time.Sleep(time.Second) })\n}\n' > z_test.go; go test -json ./... > $OUT/go-goroutine-panic.json

true
