// Package compare measures, in one process and on one PostgreSQL server, how many
// no-op worker runs per second three systems complete at the same concurrency: a bare
// fork/exec loop, River (riverqueue/river) and Countersign's runner pool. Every system
// runs the same worker, /bin/sh -c Command with Brief on stdin and its output in a log
// file, and every database-backed system gets a database of its own, created for the
// measurement and dropped after it.
//
// It is a module of its own (bench/river) so that River never enters the product's
// go.mod.
package compare

import (
	"os"
	"os/exec"
	"strings"
)

// Command is the no-op worker every system runs through /bin/sh -c: it reads the brief
// and exits 0.
const Command = "cat >/dev/null"

// Brief is the text (about 1 KB) the bare loop and River give the worker on stdin.
// Countersign gives its own brief, composed from the task.
var Brief = strings.Repeat("brief line\n", 100)

// runWorker runs Command once, Brief on stdin, stdout and stderr to a new file at log.
func runWorker(log string) error { return runCommand(Command, log) }

// runCommand runs command through /bin/sh -c once, Brief on stdin, stdout and stderr
// to a new file at log.
func runCommand(command, log string) error {
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(Brief), f, f
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
