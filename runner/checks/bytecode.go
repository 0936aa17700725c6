package checks

import (
	"os"
	"strings"
)

// envPycachePrefix moves Python's bytecode cache out of the workspace.
const envPycachePrefix = "PYTHONPYCACHEPREFIX"

// withBytecodeOutside returns env with PYTHONPYCACHEPREFIX set to a new, empty
// directory under the run's TMPDIR, and a func that removes it. Python trusts a
// .pyc whose header matches its source's size and modification time, and both are the
// worker's to forge: it could compile the correct source (or let the runner's baseline
// run cache it), write a broken source of the same size with the old time, and have
// the tests run the stale bytecode. With the prefix set, Python reads and writes
// bytecode only in that directory, made after the worker ended and under a name it
// cannot guess, so what is tested is the source. An env without TMPDIR, or one that
// sets the prefix itself, is left as it is (every runner caller gives a TMPDIR: the
// attempt's private temp dir).
func withBytecodeOutside(env []string) ([]string, func()) {
	tmp := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, envPycachePrefix+"=") {
			return env, func() {}
		}
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp = v
		}
	}
	if tmp == "" {
		return env, func() {}
	}
	dir, err := os.MkdirTemp(tmp, "pycache-")
	if err != nil {
		// The checks still run; a TMPDIR that cannot be written fails them anyway.
		return env, func() {}
	}
	return append(env[:len(env):len(env)], envPycachePrefix+"="+dir), func() { _ = os.RemoveAll(dir) }
}
