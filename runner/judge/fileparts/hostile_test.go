package fileparts

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHostileInputs runs Restore on near-1 MiB inputs built to be slow to read:
// expansion fan-out, deep conditionals, many rules that may own one recipe line,
// long reference chains, deep nesting. Each must finish well within seconds.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	fill := func(line string, n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			b.WriteString(strings.ReplaceAll(line, "#", fmt.Sprint(i)))
		}
		return b.String()
	}
	// Inputs at the size bound; an eighth of it under the race detector, which slows
	// this code twenty-fold (the quadratic blow-ups this guards against show at either).
	mb := MaxFileBytes - 4096
	if raceEnabled {
		mb /= 8
	}
	fanout := fill("A = $(B)\n", mb/8) + fill("B = $(C)\n", mb/8) + fill("C = $(D) x#\n", mb/8) +
		"D = test\n$(A): ; @true\ntest: $(A)\n\tgo test\n"
	cases := []struct {
		name, file, part string
		base, worker     string
	}{
		{"make fan-out", "Makefile", "targets", fanout, fanout + "x: ; true\n"},
		{"make deep conditionals", "Makefile", "targets",
			"test:\n\tgo test\n" + strings.Repeat("ifeq (a,b)\n", 999) + strings.Repeat("endif\n", 999),
			"test:\n\tgo test\n" + strings.Repeat("ifeq (a,b)\nx:\n", 999) + "\texit 0\n" + strings.Repeat("endif\n", 999)},
		{"make many owners", "Makefile", "targets",
			"test:\n\tgo test\nifeq (a,b)\n" + fill("t#:\n\techo #\n", mb/2) + "endif\n",
			"test:\n\tgo test\nifeq (a,b)\n" + fill("t#:\n\techo #\n", mb/2) + "endif\n\texit 0\n"},
		{"make reverse chain", "Makefile", "targets",
			fill("V# = $(V#x)\n", mb/2) + "test:\n\t$(V0)\n",
			fill("V# = $(V#x) y\n", mb/2) + "test:\n\t$(V0)\n"},
		{"make long line", "Makefile", "targets",
			"test: " + strings.Repeat("$(", mb/4) + "\n\tgo test\n", "test:\n\ttrue\n"},
		{"toml deep arrays", "pyproject.toml", "[tool.pytest]",
			"[tool.pytest.ini_options]\na = " + strings.Repeat("[", mb/2) + "\n",
			"[tool.pytest.ini_options]\na = " + strings.Repeat("[", mb/2) + strings.Repeat("]", mb/2-10) + "\n"},
		{"toml many tables", "pyproject.toml", "[tool.pytest]",
			fill("[tool.pytest.t#]\nx = 1\n", mb), fill("[tool.pytest.t#]\nx = 2\n", mb)},
		{"ini many sections", "setup.cfg", "[tool:pytest]",
			fill("[tool:pytest]\nx = #\n", mb), fill("[tool:pytest]\n\fx = #\r", mb)},
		{"json deep nesting", "package.json", "scripts",
			`{"scripts": {"test": "node --test"}}`, `{"a": ` + strings.Repeat("[", mb/2) + strings.Repeat("]", mb/2) + `}`},
		{"json many scripts", "package.json", "scripts",
			`{"scripts": {` + fill(`"s#": "npm run s#x && npm test", `, mb) + `"test": "x"}}`,
			`{"scripts": {` + fill(`"s#": "exit 0", `, mb) + `"test": "y"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names := ScriptsRun([]string{"npm test"})
			if c.part == "targets" {
				names = []string{"test", DefaultGoal}
			}
			start := time.Now()
			judged, changed, err := Restore(c.file, c.part, []byte(c.base), []byte(c.worker), names)
			d := time.Since(start)
			t.Logf("%v: %d bytes, %d changed, err %v", d, len(judged), len(changed), err)
			// Not a timing target (the benchmarks are for speed): a bound far above
			// the linear cost, that only a quadratic blow-up crosses.
			if d > time.Minute {
				t.Errorf("took %v", d)
			}
		})
	}
}
