package compare

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ). Linux fixes it
// at 100 on every architecture Go builds for, whatever the kernel's HZ; reading it
// with sysconf would need cgo.
const clockTick = 10 * time.Millisecond

// procCPU is a process's CPU time as /proc/<pid>/stat reports it.
type procCPU struct {
	// Self is its own user and system time (utime + stime).
	Self time.Duration
	// Children is the user and system time of the children it has waited for
	// (cutime + cstime): for a runner or a River process, its workers.
	Children time.Duration
}

// readProcCPU reads /proc/<pid>/stat. PostgreSQL's backends belong to another user,
// but stat is readable by everyone.
func readProcCPU(pid int) (procCPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procCPU{}, err
	}
	return parseProcStat(string(b))
}

// parseProcStat takes the times out of one /proc/<pid>/stat line. The command name
// (field 2, in parentheses) may hold spaces and parentheses itself, so the fields are
// counted from the last ')': field 3 (state) is the first after it, utime is field 14.
func parseProcStat(line string) (procCPU, error) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return procCPU{}, fmt.Errorf("proc stat: no command name in %q", line)
	}
	f := strings.Fields(line[end+1:])
	if len(f) < 15 {
		return procCPU{}, fmt.Errorf("proc stat: %d fields after the command name, want at least 15", len(f))
	}
	var t [4]int64
	for i := range t {
		v, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return procCPU{}, fmt.Errorf("proc stat field %d: %w", 14+i, err)
		}
		t[i] = v
	}
	return procCPU{Self: time.Duration(t[0]+t[1]) * clockTick, Children: time.Duration(t[2]+t[3]) * clockTick}, nil
}

// loadAverage returns the first line of /proc/loadavg's three figures (1, 5 and 15
// minutes), or "unknown": the machine the figures were measured on is shared.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
