package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// RiverChildFlag is the flag of bench-compare that makes it a River process of the
// scale-out measurement (RiverChild) rather than a measurement: the parent starts
// itself again with -river-child -db URL -c slots [-river-bench].
const RiverChildFlag = "river-child"

// fleetProc is one measured OS process: a `countersign runner` or a River child.
type fleetProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	dir  string
}

// startProc starts name with the arguments args returns for a new temporary
// directory, which is also the process's working directory and holds its log.
func startProc(name, bin string, args func(dir string) []string) (*fleetProc, error) {
	dir, err := os.MkdirTemp("", "cs-bench-"+name+"-")
	if err != nil {
		return nil, err
	}
	p := &fleetProc{name: name, log: filepath.Join(dir, "process.log"), dir: dir}
	f, err := os.Create(p.log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer f.Close()
	p.cmd = exec.Command(bin, args(dir)...)
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, f, f
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// stop ends the process with SIGTERM (SIGKILL after 30 s), removes its directory and
// returns an error, with the end of its log, when it did not exit cleanly.
func (p *fleetProc) stop() error {
	defer os.RemoveAll(p.dir)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		err = fmt.Errorf("did not stop within 30 s of SIGTERM (killed): %v", <-done)
	}
	if err != nil {
		return fmt.Errorf("%s: %w; log ends:\n%s", p.name, err, p.tail())
	}
	return nil
}

// tail returns the last 2000 bytes of the process's log.
func (p *fleetProc) tail() string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(0, len(b)-2000):])
}

// stopAll stops every process and joins their errors.
func stopAll(procs []*fleetProc) error {
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.stop())
	}
	return errors.Join(errs...)
}

// pids returns the processes' ids.
func pids(procs []*fleetProc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.cmd.Process.Pid
	}
	return out
}

// BuildCountersign builds the countersign command of the module this one replaces
// (the repository's root) into dir and returns the binary's path.
func BuildCountersign(ctx context.Context, dir string) (string, error) {
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/countersign/countersign")
	root, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("find the countersign module: %w", err)
	}
	bin := filepath.Join(dir, "countersign")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/countersign")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/countersign: %v\n%s", err, out)
	}
	return bin, nil
}

// RiverChild is one River process of the scale-out measurement: a client on the
// migrated database at dbURL working the default queue with slots workers, each job
// running command through /bin/sh -c with Brief on stdin and its log in a temporary
// directory, until ctx ends; then it stops the client (finishing running jobs).
func RiverChild(ctx context.Context, dbURL string, slots int, command string, tuning RiverTuning, log *slog.Logger) error {
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = int32(slots + 10)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	dir, err := os.MkdirTemp("", "cs-bench-river-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[execArgs]) error {
		return runCommand(command, filepath.Join(dir, fmt.Sprintf("job-%d.log", job.ID)))
	}))
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     tuning.FetchCooldown,
		FetchPollInterval: tuning.FetchPollInterval,
		Logger:            orDiscard(log),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: slots}},
		Workers:           workers,
	})
	if err != nil {
		return err
	}
	// Not ctx: its end is the signal to stop gracefully below, not to abort.
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Stop(sctx)
}

// riverChildArgs are the arguments that start bench-compare as RiverChild.
func riverChildArgs(dbURL string, slots int, bench bool) []string {
	args := []string{"-" + RiverChildFlag, "-db", dbURL, "-c", fmt.Sprint(slots)}
	if bench {
		args = append(args, "-river-bench")
	}
	return args
}
