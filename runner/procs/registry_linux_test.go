//go:build linux

package procs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperDirEnv makes the test binary act as a runner that tracks one group and then
// waits to be killed (see TestMain).
const helperDirEnv = "PROCS_TEST_RUNNER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	os.Exit(m.Run())
}

// runHelper opens the registry in dir, starts and tracks a group of three processes,
// prints its pgid and then blocks until it is killed: a runner that dies with its
// worker running.
func runHelper(dir string) int {
	r, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("sh", "-c", "sleep 100 & sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r.Track(7, 1)(cmd.Process.Pid) // done is never called: the runner "crashes"
	fmt.Printf("pgid %d\n", cmd.Process.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed (or the test closes stdin)
	return 0
}

func TestReapAllKillsTheGroupOfACrashedRunner(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperDirEnv+"="+dir)
	helper.Stderr = os.Stderr
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		helper.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pgid ")))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	pids := waitMembers(t, pgid, 3)
	t.Cleanup(func() { killAll(pids) })
	// The runner dies; its group lives on, orphaned.
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if got := len(livePIDs(pgid)); got != 3 {
		t.Fatalf("%d processes of the group alive after the runner died, want 3", got)
	}

	r := open(t, dir)
	reaped, err := r.ReapAll(timeout(t, 5*time.Second))
	if err != nil || reaped != 1 {
		t.Fatalf("ReapAll = %d, %v; want 1, nil", reaped, err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d of the crashed runner's group still alive after ReapAll", pid)
		}
	}
	if files := records(t, dir); len(files) != 0 {
		t.Errorf("records left: %v", files)
	}
	if locks := ownerFiles(t, dir); len(locks) != 1 || locks[0] != r.owner.name {
		t.Errorf("owner files %v, want only %s: the dead runner's lock file is not tidied", locks, r.owner.name)
	}
}

func TestReapAllSparesAReusedPid(t *testing.T) {
	dir := t.TempDir()
	// An unrelated group whose leader has the recorded pid, but started at another
	// time: the recorded group died and its pid was handed out again.
	other := startGroup(t, "sleep 100")
	st := mustStat(t, other.Process.Pid)
	r := open(t, dir)
	rec := fakeRecord(r, st)
	rec.StartTicks = st.start - 1
	path := writeRecord(t, dir, rec)

	reaped, err := r.ReapAll(timeout(t, 5*time.Second))
	if err != nil || reaped != 0 {
		t.Fatalf("ReapAll = %d, %v; want 0, nil", reaped, err)
	}
	if !alive(other.Process.Pid) {
		t.Fatal("ReapAll killed a group that only reused the recorded pid")
	}
	if exists(path) {
		t.Error("the record of the reused pid was kept")
	}
}

func TestRecordsOfAnotherHostOrBootKillNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(*record)
		wantKept bool
	}{
		// Its pids mean nothing here: not ours to judge, and not ours to delete.
		{"another host", func(rec *record) { rec.Host = "elsewhere.invalid" }, true},
		// The host rebooted since: its processes are gone, so is the record.
		{"another boot", func(rec *record) { rec.BootID = "00000000-0000-0000-0000-000000000000" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			g := startGroup(t, "sleep 100")
			r := open(t, dir)
			rec := fakeRecord(r, mustStat(t, g.Process.Pid)) // otherwise a perfect match
			tc.change(&rec)
			path := writeRecord(t, dir, rec)
			for _, reap := range []func(context.Context) (int, error){
				r.ReapAll,
				func(ctx context.Context) (int, error) { return r.ReapTask(ctx, rec.TaskID) },
			} {
				reaped, err := reap(timeout(t, 5*time.Second))
				if err != nil || reaped != 0 {
					t.Fatalf("reaped %d, %v; want 0, nil", reaped, err)
				}
				if !alive(g.Process.Pid) {
					t.Fatal("a record of " + tc.name + " killed a process")
				}
				if exists(path) != tc.wantKept {
					t.Fatalf("record kept: %v, want %v", exists(path), tc.wantKept)
				}
			}
		})
	}
}

func TestReapTaskReapsOnlyItsTask(t *testing.T) {
	dir := t.TempDir()
	// A live runner tracks both: ReapTask reaps regardless of owner, because a re-run
	// must not overlap the earlier attempt even when that runner still lives.
	r1 := open(t, dir)
	g1 := startGroup(t, "sleep 100 & sleep 100 & wait")
	done1 := r1.Track(1, 1)(g1.Process.Pid)
	g12 := startGroup(t, "sleep 100 & sleep 100 & wait") // task 12's names start like task 1's
	r1.Track(12, 3)(g12.Process.Pid)
	pids1, pids12 := waitMembers(t, g1.Process.Pid, 3), waitMembers(t, g12.Process.Pid, 3)

	r2 := open(t, dir)
	reaped, err := r2.ReapTask(timeout(t, 5*time.Second), 1)
	if err != nil || reaped != 1 {
		t.Fatalf("ReapTask(1) = %d, %v; want 1, nil", reaped, err)
	}
	for _, pid := range pids1 {
		if alive(pid) {
			t.Errorf("process %d of task 1 still alive after ReapTask(1)", pid)
		}
	}
	for _, pid := range pids12 {
		if !alive(pid) {
			t.Errorf("process %d of task 12 killed by ReapTask(1)", pid)
		}
	}
	if files := records(t, dir); len(files) != 1 || !strings.HasPrefix(files[0], "task-12-3-") {
		t.Errorf("records after ReapTask(1): %v, want task 12's only", files)
	}
	done1() // the old run ends late: its record is gone already, which is no error
}

func TestReapsAGroupWhoseLeaderExited(t *testing.T) {
	dir := t.TempDir()
	r1 := open(t, dir)
	// The leader starts a child in its group and exits at once; we reap the leader,
	// so no process has the group id as its pid any more, but the group lives on.
	leader := exec.Command("sh", "-c", "sleep 100 &")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := leader.Process.Pid
	r1.Track(5, 2)(pgid) // while the leader is unreaped, as the runner does
	if err := leader.Wait(); err != nil {
		t.Fatal(err)
	}
	child := waitMembers(t, pgid, 1)
	t.Cleanup(func() { killAll(child) })
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pgid)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the leader %d is still there (%v)", pgid, err)
	}
	if err := r1.Close(); err != nil { // its runner is gone
		t.Fatal(err)
	}

	r2 := open(t, dir)
	reaped, err := r2.ReapAll(timeout(t, 5*time.Second))
	if err != nil || reaped != 1 {
		t.Fatalf("ReapAll = %d, %v; want 1, nil", reaped, err)
	}
	if alive(child[0]) {
		t.Error("the child of an exited leader survived ReapAll")
	}
	if files := records(t, dir); len(files) != 0 {
		t.Errorf("records left: %v", files)
	}
}

func TestReapAllSparesTheGroupsOfALiveRunner(t *testing.T) {
	dir := t.TempDir()
	r1 := open(t, dir)
	g := startGroup(t, "sleep 100")
	r1.Track(3, 1)(g.Process.Pid)

	r2 := open(t, dir) // a second runner starting on the same host and data dir
	reaped, err := r2.ReapAll(timeout(t, 5*time.Second))
	if err != nil || reaped != 0 {
		t.Fatalf("ReapAll next to a live runner = %d, %v; want 0, nil", reaped, err)
	}
	if !alive(g.Process.Pid) {
		t.Fatal("ReapAll killed the worker of a live runner")
	}
	if len(records(t, dir)) != 1 {
		t.Fatal("ReapAll deleted the record of a live runner")
	}

	if err := r1.Close(); err != nil { // as if it died
		t.Fatal(err)
	}
	reaped, err = r2.ReapAll(timeout(t, 5*time.Second))
	if err != nil || reaped != 1 {
		t.Fatalf("ReapAll after the runner went = %d, %v; want 1, nil", reaped, err)
	}
	if alive(g.Process.Pid) {
		t.Fatal("the group of a closed registry survived ReapAll")
	}
}

func TestReapAllBoundedByContext(t *testing.T) {
	dir := t.TempDir()
	r1 := open(t, dir)
	g := startGroup(t, "sleep 100")
	r1.Track(4, 1)(g.Process.Pid)
	r1.Close()

	r2 := open(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Killed at once, but not seen gone before ctx ended: reported, record kept.
	reaped, err := r2.ReapAll(ctx)
	if !errors.Is(err, context.Canceled) || reaped != 0 {
		t.Fatalf("ReapAll with a done ctx = %d, %v; want 0, context.Canceled", reaped, err)
	}
	if len(records(t, dir)) != 1 {
		t.Fatal("the record of a group not seen gone was deleted")
	}
	// The next reap finds it gone and tidies up.
	if _, err := r2.ReapAll(timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if alive(g.Process.Pid) || len(records(t, dir)) != 0 {
		t.Fatal("the group or its record survived the second ReapAll")
	}
}

func TestDoneRemovesTheRecordOnceTheGroupIsGone(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	g := startGroup(t, "sleep 100")
	done := r.Track(9, 1)(g.Process.Pid)
	if len(records(t, dir)) != 1 {
		t.Fatal("Track wrote no record")
	}
	done() // too early: the group lives
	if len(records(t, dir)) != 1 {
		t.Fatal("done removed the record of a live group")
	}
	done = r.Track(9, 1)(g.Process.Pid) // same run recorded again (same name)
	stopGroup(g)
	done()
	if files := records(t, dir); len(files) != 0 {
		t.Fatalf("records after done: %v", files)
	}
}

func TestTrackAndDoneConcurrently(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			cmd := exec.Command("sh", "-c", "exit 0")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			done := r.Track(int64(i%4), i)(cmd.Process.Pid)
			_ = cmd.Wait()
			done()
			done() // idempotent
		})
	}
	wg.Wait()
	if files := records(t, dir); len(files) != 0 {
		t.Fatalf("records left: %v", files)
	}
}

func TestTrackRefusesAProcessThatLeadsNoGroup(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	// In the test's own group: reaping "its group" would kill the test itself.
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r.Track(1, 1)(cmd.Process.Pid) // done not called: it might hide a record
	if files := records(t, dir); len(files) != 0 {
		t.Fatalf("recorded a process that leads no group: %v", files)
	}
}

func TestUnreadableRecordsAreDeleted(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	path := filepath.Join(dir, "task-9-1-1-1.json")
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReapAll(timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if exists(path) {
		t.Fatal("an unreadable record was kept")
	}
}

func TestParseStatCountsFieldsAfterTheLastParen(t *testing.T) {
	// A command name may hold spaces and parentheses.
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = strconv.Itoa(i + 3) // field n holds n
	}
	fields[0] = "S"
	line := "4242 (evil) 1 2 (x) " + strings.Join(fields, " ") + "\n"
	p, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if p.state != 'S' || p.pgid != 5 || p.sid != 6 || p.start != 22 {
		t.Fatalf("parsed %+v; want state S, pgid 5, sid 6, start 22", p)
	}
	if _, err := parseStat(1, []byte("1 (sh R 1 1")); err == nil {
		t.Fatal("a truncated line parsed")
	}
}

// open opens a registry in dir, closed at the end of the test.
func open(t *testing.T, dir string) *Registry {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Log = slog.New(slog.NewTextHandler(t.Output(), nil))
	t.Cleanup(func() { r.Close() })
	return r
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startGroup starts script in a process group of its own, killed at the end of the
// test.
func startGroup(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(cmd) })
	return cmd
}

// stopGroup kills and reaps cmd's group. Until Wait the leader is an unreaped child,
// so the group id cannot name anybody else's group.
func stopGroup(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

func mustStat(t *testing.T, pid int) procStat {
	t.Helper()
	p, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeRecord is the record Track would write for p, by a runner that is gone.
func fakeRecord(r *Registry, p procStat) record {
	return record{Host: r.host, BootID: r.boot, PID: p.pid, PGID: p.pgid, SID: p.sid, StartTicks: p.start,
		TaskID: 77, Attempt: 1, Owner: "owner-0-gone.lock", Recorded: time.Now()}
}

func writeRecord(t *testing.T, dir string, rec record) string {
	t.Helper()
	b := fmt.Appendf(nil, `{"host":%q,"boot_id":%q,"pid":%d,"pgid":%d,"sid":%d,"start_ticks":%d,"task_id":%d,"attempt":%d,"owner":%q}`,
		rec.Host, rec.BootID, rec.PID, rec.PGID, rec.SID, rec.StartTicks, rec.TaskID, rec.Attempt, rec.Owner)
	path := filepath.Join(dir, rec.fileName())
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// records lists the record files in dir.
func records(t *testing.T, dir string) []string { return filesLike(t, dir, "task-", ".json") }

func ownerFiles(t *testing.T, dir string) []string { return filesLike(t, dir, "owner-", ".lock") }

func filesLike(t *testing.T, dir, prefix, suffix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), suffix) {
			names = append(names, e.Name())
		}
	}
	return names
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// The helpers below read /proc on their own, not through the package's parser, so a
// bug there cannot hide from the tests.

// statFields returns the fields of /proc/<pid>/stat after the command name (field 3
// first), or nil when the process is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// alive reports whether pid runs; a zombie is dead.
func alive(pid int) bool {
	f := statFields(pid)
	return f != nil && f[0] != "Z" && f[0] != "X"
}

// livePIDs lists the live processes whose process group is pgid.
func livePIDs(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(pid); f != nil && f[2] == strconv.Itoa(pgid) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitMembers waits until pgid has n live processes (its shell has forked them) and
// returns them.
func waitMembers(t *testing.T, pgid, n int) []int {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for {
		if pids := livePIDs(pgid); len(pids) == n {
			return pids
		}
		select {
		case <-deadline:
			t.Fatalf("group %d has %d live processes, want %d", pgid, len(livePIDs(pgid)), n)
		case <-tick.C:
		}
	}
}

// killAll kills what a failed test left behind, each pid only while it still runs.
func killAll(pids []int) {
	for _, pid := range pids {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A finished run's record file is overwritten by the next run's record instead of a
// file being removed and another made.
func TestRecordFilesAreReused(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	inodes := map[uint64]bool{}
	for i := range 3 {
		g := startGroup(t, "sleep 100")
		done := r.Track(5, i+1)(g.Process.Pid)
		files := records(t, dir)
		if len(files) != 1 {
			t.Fatalf("records: %v", files)
		}
		st, err := os.Stat(filepath.Join(dir, files[0]))
		if err != nil {
			t.Fatal(err)
		}
		inodes[st.Sys().(*syscall.Stat_t).Ino] = true
		stopGroup(g)
		done()
	}
	if len(inodes) != 1 {
		t.Fatalf("3 runs used %d record files, want 1 reused", len(inodes))
	}
	if files := records(t, dir); len(files) != 0 {
		t.Fatalf("records left: %v", files)
	}
}
