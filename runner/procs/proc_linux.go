//go:build linux

package procs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what the package reads of one /proc/<pid>/stat.
type procStat struct {
	pid   int
	state byte // R, S, D, Z, X, ...
	pgid  int
	sid   int
	start uint64 // clock ticks after boot
}

// dead reports a zombie (or a process being torn down): it runs no code and holds no
// file, so for reaping it is gone.
func (p procStat) dead() bool { return p.state == 'Z' || p.state == 'X' }

// errNoProc means the process does not exist (any more).
var errNoProc = errors.New("no such process")

// readStat reads /proc/<pid>/stat; errNoProc when the process is gone.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procStat{}, errNoProc
	}
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses one stat line. The command name, in parentheses, may itself
// contain spaces and ") ", so fields are counted after the last ')'.
func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// f[0] is field 3 (state), so field n is f[n-3].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	pgid, err1 := strconv.Atoi(f[5-3])
	sid, err2 := strconv.Atoi(f[6-3])
	start, err3 := strconv.ParseUint(f[22-3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procStat{pid: pid, state: f[0][0], pgid: pgid, sid: sid, start: start}, nil
}

// snapshot is every process of the host at one moment, by pid and by group.
type snapshot struct {
	byPID  map[int]procStat
	byPGID map[int][]procStat
}

// scan reads every process in /proc. Processes that exit while it reads are skipped.
func scan() (snapshot, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return snapshot{}, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{byPID: make(map[int]procStat, len(names)), byPGID: make(map[int][]procStat)}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue // not a process: /proc/self, /proc/sys, ...
		}
		p, err := readStat(pid)
		if errors.Is(err, errNoProc) {
			continue
		}
		if err != nil {
			return snapshot{}, err
		}
		s.byPID[pid] = p
		s.byPGID[p.pgid] = append(s.byPGID[p.pgid], p)
	}
	return s, nil
}

// readBootID returns the id the kernel draws anew at every boot.
func readBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("/proc/sys/kernel/random/boot_id is empty")
	}
	return id, nil
}
