package handlers

import (
	"io/fs"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// changedCacheMax bounds the remembered answers of changedSinceCached; when full it
// starts again empty (an inbox holds at most a few hundred outputs).
const changedCacheMax = 4096

// changedKey is what a remembered answer of changedSinceCached holds for: the output
// file as its inode (device, number, size, mtime, ctime) says it is, and the hash it
// was compared with. A rewrite changes the ctime, which no one can set back (unlike
// the mtime), so a rewritten file is hashed again.
type changedKey struct {
	dir, output, hash string
	git               bool
	file              fileStamp
}

// changedCache remembers changedSince's answers, so that the inbox and the task page
// do not hash every output again on every render.
var changedCache = struct {
	sync.Mutex
	m map[changedKey]bool
}{m: map[changedKey]bool{}}

// changedSinceCached is changedSince for the output file fi (the one being served),
// remembered by its stamp: an unchanged inode is not hashed again. A file changed
// too recently for its timestamps to tell a later rewrite apart (racyWindow) is not
// remembered, nor is one whose stamp this system cannot read.
func changedSinceCached(fp *models.Fingerprint, fi fs.FileInfo) bool {
	stamp, ok := stampOf(fi)
	if !ok {
		return changedSince(fp)
	}
	k := changedKey{dir: fp.Dir, output: fp.Output, hash: outputHash(fp), git: fp.Git, file: stamp}
	changedCache.Lock()
	changed, known := changedCache.m[k]
	changedCache.Unlock()
	if known {
		return changed
	}
	now := time.Now()
	changed = changedSince(fp)
	if now.Sub(stamp.ctime) > racyWindow(stamp.ctime) {
		changedCache.Lock()
		if len(changedCache.m) >= changedCacheMax {
			clear(changedCache.m)
		}
		changedCache.m[k] = changed
		changedCache.Unlock()
	}
	return changed
}

// racyWindow is how long after a file's ctime a rewrite could still leave the same
// ctime: a file system with whole-second timestamps (no nanoseconds in the stamp)
// gets two seconds, one with fine timestamps (the kernel's coarse clock, a few
// milliseconds) a tenth of a second.
func racyWindow(ctime time.Time) time.Duration {
	if ctime.Nanosecond() == 0 {
		return 2 * time.Second
	}
	return 100 * time.Millisecond
}
