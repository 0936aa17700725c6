package judge

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The stat cache makes a candidate snapshot of a large workspace cheap: the index the
// last snapshot of the same directory ended with is kept (a file of the judge's, out
// of every worker's reach), and the next snapshot starts from it — brought to its
// parent's tree with `read-tree -m`, which keeps a path's recorded stat data only
// where the parent holds the same blob. A file whose stat data is exactly what was
// recorded when it was hashed keeps that hash; every other file is hashed again
// (BenchmarkSnapshot10k: the reason).
//
// The comparison is the judge's own, to the nanosecond, not git's (this git compares
// times to the second): size, inode, device, mode, modification time and change
// time. A worker can set a file's modification time back, but not its change time —
// the kernel sets ctime to now on every write, truncate, rename, link or chmod, and
// only a process that can set the clock could forge it. An entry is trusted only if
// its recorded change time is more than a second older than the cached index itself,
// so a file changed within the same clock tick as it was hashed (before the worker
// even started) is hashed again. TestSnapshotSeesForgedMtime shows a rewrite with the
// old size, inode and modification time is caught, and that it is not when the change
// time is not compared.

// noStatCache is a test-only switch that makes every snapshot hash every file, for
// comparing snapshots taken through the cache with snapshots taken without it.
var noStatCache = false

// ignoreCtime is a test-only switch that leaves the change time out of the
// comparison, to show what it defends.
var ignoreCtime = false

// statData is what an index entry records of a file's stat, as git truncates it.
type statData struct {
	ctimeS, ctimeN, mtimeS, mtimeN, dev, ino, mode, size uint32
}

// cachePath is where the last index of a snapshot of dir is kept.
func (s *Store) cachePath(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return filepath.Join(s.root, "statcache", hex.EncodeToString(h[:16])+".index")
}

// seedIndex fills the private index at index with the tree of parent, and returns the
// stat data it may trust (nil when there is no cache: read-tree records none, so
// every file is hashed).
func (s *Store) seedIndex(ctx context.Context, g func([]byte, ...string) ([]byte, error), dir, parent, index string) (map[string]statData, error) {
	out, err := s.git(ctx, gitCmd{args: []string{"rev-parse", "--verify", "-q", parent + "^{tree}"}})
	if err != nil {
		return nil, fmt.Errorf("judge: parent %s is not a commit in the store: %w", shortID(parent), err)
	}
	tree := strings.TrimSpace(string(out))
	cached := s.cachePath(dir)
	if fi, err := os.Lstat(cached); err == nil && !noStatCache && fi.Mode().IsRegular() && os.Link(cached, index) == nil {
		if _, err := g(nil, "read-tree", "-m", "-i", tree); err == nil {
			if entries, err := readIndexStats(index); err == nil {
				cutoff := fi.ModTime().Add(-time.Second)
				for p, st := range entries {
					if !time.Unix(int64(st.ctimeS), int64(st.ctimeN)).Before(cutoff) {
						delete(entries, p)
					}
				}
				return entries, nil
			}
		}
		_ = os.Remove(index)
	}
	_, err = g(nil, "read-tree", tree)
	return nil, err
}

// unchanged says whether a file's lstat st is exactly the stat data recorded.
func unchanged(st *syscall.Stat_t, rec statData) bool {
	now := statData{ctimeS: uint32(st.Ctim.Sec), ctimeN: uint32(st.Ctim.Nsec), mtimeS: uint32(st.Mtim.Sec), mtimeN: uint32(st.Mtim.Nsec),
		dev: uint32(st.Dev), ino: uint32(st.Ino), mode: st.Mode, size: uint32(st.Size)}
	if ignoreCtime {
		now.ctimeS, now.ctimeN = rec.ctimeS, rec.ctimeN
	}
	// git records the mode as 0100644, 0100755 or 0120000.
	switch {
	case now.mode&syscall.S_IFMT == syscall.S_IFLNK:
		now.mode = 0o120000
	case now.mode&syscall.S_IFMT == syscall.S_IFREG && now.mode&0o100 != 0:
		now.mode = 0o100755
	case now.mode&syscall.S_IFMT == syscall.S_IFREG:
		now.mode = 0o100644
	default:
		return false
	}
	return now == rec
}

// keepIndex keeps the index a snapshot of dir ended with, for the next one. A failure
// only costs the next snapshot its speed.
func (s *Store) keepIndex(dir, index string) {
	dst := s.cachePath(dir)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return
	}
	tmp := dst + ".new"
	_ = os.Remove(tmp)
	if err := os.Link(index, tmp); err != nil {
		return
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
	}
}

// readIndexStats reads the stat data of every stage-0 entry of a version 2 or 3 index
// (the versions git writes unless told otherwise; any other is not read, and nothing
// is trusted).
func readIndexStats(index string) (map[string]statData, error) {
	b, err := os.ReadFile(index)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, fmt.Errorf("judge: %s is not an index", index)
	}
	version, count := binary.BigEndian.Uint32(b[4:8]), binary.BigEndian.Uint32(b[8:12])
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("judge: index version %d", version)
	}
	out := make(map[string]statData, count)
	off := 12
	for i := uint32(0); i < count; i++ {
		if off+62 > len(b) {
			return nil, fmt.Errorf("judge: index truncated")
		}
		u := func(k int) uint32 { return binary.BigEndian.Uint32(b[off+4*k:]) }
		flags := binary.BigEndian.Uint16(b[off+60:])
		head := 62
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, fmt.Errorf("judge: extended flags in a version 2 index")
			}
			head = 64
		}
		end := off + head
		for end < len(b) && b[end] != 0 {
			end++
		}
		if end >= len(b) {
			return nil, fmt.Errorf("judge: index truncated")
		}
		name := string(b[off+head : end])
		if flags&0x3000 == 0 { // stage 0
			out[name] = statData{ctimeS: u(0), ctimeN: u(1), mtimeS: u(2), mtimeN: u(3), dev: u(4), ino: u(5), mode: u(6), size: u(9)}
		}
		off += (head + len(name) + 8) &^ 7
	}
	return out, nil
}
