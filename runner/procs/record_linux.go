//go:build linux

package procs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// record is one tracked process group, stored as one JSON file.
type record struct {
	Host       string    `json:"host"`
	BootID     string    `json:"boot_id"`
	PID        int       `json:"pid"`
	PGID       int       `json:"pgid"`
	SID        int       `json:"sid"`
	StartTicks uint64    `json:"start_ticks"`
	TaskID     int64     `json:"task_id"`
	Attempt    int       `json:"attempt"`
	Owner      string    `json:"owner"` // lock file name of the Registry that recorded it
	Recorded   time.Time `json:"recorded"`
}

// Files in the registry directory. Records and owner locks are published by rename,
// so a name with tmpPrefix is never a finished file.
const (
	recordPrefix = "task-"
	recordSuffix = ".json"
	ownerPrefix  = "owner-"
	ownerSuffix  = ".lock"
	tmpPrefix    = ".tmp-"
)

// staleTemp is the age after which a temporary file can only be the leftover of a
// process that died between creating and renaming it.
const staleTemp = time.Minute

// fileName names a record so that a task's records are found by their prefix alone
// (taskPrefix) and two runs never share a name: within a boot a pid and a start time
// name one process.
func (rec record) fileName() string {
	return fmt.Sprintf("%s%d-%d-%d%s", taskPrefix(rec.TaskID), rec.Attempt, rec.PID, rec.StartTicks, recordSuffix)
}

// taskPrefix is the start of the names of taskID's records. The dash after the id
// keeps task 1 from matching task 12's files.
func taskPrefix(taskID int64) string { return fmt.Sprintf("%s%d-", recordPrefix, taskID) }

// writeAtomic publishes data as dir/name by writing a temporary file and renaming
// it, so that a reader never sees half a file. There is no fsync: records matter only
// within one boot, and a process that dies (even by SIGKILL) loses no written data.
func writeAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, tmpPrefix+name+"-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// storedRecord is a record with the file it came from.
type storedRecord struct {
	record
	path string
}

// listRecords reads the records whose names start with prefix. Files that vanish
// meanwhile (another runner reaped them) are skipped; files that cannot be parsed are
// returned in bad, for the caller to report and delete: they identify nothing.
func listRecords(dir, prefix string) (recs []storedRecord, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil || rec.PGID <= 0 {
			bad = append(bad, path)
			continue
		}
		recs = append(recs, storedRecord{rec, path})
	}
	return recs, bad, nil
}

// removeIfExists deletes path; a file already gone (another reaper was faster) is
// not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeStaleTemps deletes temporary files left by processes that died mid-write.
func removeStaleTemps(dir string, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
			errs = append(errs, removeIfExists(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
