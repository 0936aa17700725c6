package handlers

import (
	"io/fs"
	"syscall"
	"time"
)

// fileStamp is what an inode says of a file's identity and last change.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime time.Time
}

// stampOf reads fi's stamp; false when fi does not carry the inode's.
func stampOf(fi fs.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: time.Unix(st.Mtim.Unix()), ctime: time.Unix(st.Ctim.Unix())}, true
}
