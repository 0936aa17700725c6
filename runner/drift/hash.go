// Package drift tells whether verified work is still what was verified: it hashes the
// files a task's fingerprint names (models.Fingerprint) in the task's workspace again
// and, through the service, marks a task whose work changed stale (models.Drift) — by
// `countersign recheck`, the Recheck buttons and, when configured, a periodic pass.
package drift

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/countersign/countersign/runner/workspace"
)

// maxFileBytes bounds what one file's hash reads: a workspace file larger than this
// counts as changed rather than keeping a recheck reading for ever.
const maxFileBytes = 1 << 30

// Hash names how a fingerprint hashes a file: SHA-256 hex, or a git blob id of the
// given length (40: SHA-1 repositories, 64: SHA-256 ones).
type Hash struct {
	Git     bool
	BlobLen int
}

// HashOf is the hash a fingerprint of that kind used for recorded (a SHA-256 hex, or a
// blob id whose length says the repository's object format).
func HashOf(git bool, recorded string) Hash {
	return Hash{Git: git, BlobLen: len(recorded)}
}

// File hashes rel below dir the way h says, never following a link nor leaving dir.
// exists is false when there is no regular file there (gone, or swapped for a link or
// a directory: either way not the verified file).
func (h Hash) File(dir, rel string) (sum string, exists bool, err error) {
	f, err := workspace.OpenRegularBeneath(dir, filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, workspace.ErrNotRegular) ||
		errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.ENOTDIR) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if fi.Size() > maxFileBytes {
		return "too-large", true, nil
	}
	var d hash.Hash
	switch {
	case !h.Git:
		d = sha256.New()
	case h.BlobLen == 64:
		d = sha256.New()
		fmt.Fprintf(d, "blob %d\x00", fi.Size())
	default:
		d = sha1.New()
		io.WriteString(d, "blob "+strconv.FormatInt(fi.Size(), 10)+"\x00")
	}
	n, err := io.Copy(d, io.LimitReader(f, fi.Size()+1))
	if err != nil {
		return "", false, err
	}
	if n != fi.Size() {
		return "changing", true, nil // written while read: not what was verified
	}
	return hex.EncodeToString(d.Sum(nil)), true, nil
}

// dirExists reports whether dir is a directory.
func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}
