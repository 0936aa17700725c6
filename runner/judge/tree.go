package judge

import (
	"context"
	"io/fs"
)

// The judge judges trees, not directories: the worker's result is fixed as a candidate
// commit in the judge's own object store before any check runs (Store.Snapshot), the
// base is the same kind of snapshot taken before the first worker ran, and the judge's
// view is built from the two (OpenView). These types are what the parts share.

// Change is one path whose entry differs between two trees, as `git diff-tree -r`
// reports it (no rename detection: a rename is a deletion and an addition).
type Change struct {
	// Path is slash-separated and relative to the tree's root.
	Path string
	// OldMode and NewMode are git's modes (0o100644, 0o100755, 0o120000 for a symbolic
	// link, 0o160000 for a submodule); 0 on the side where the path is absent.
	OldMode, NewMode uint32
	// OldBlob and NewBlob are the object ids on each side; "" where the path is absent.
	OldBlob, NewBlob string
}

// Trees reads the judge's object store: what a view is built from.
type Trees interface {
	// Changes lists every path whose entry differs between the trees of commits from
	// and to, sorted by path.
	Changes(ctx context.Context, from, to string) ([]Change, error)
	// Blob returns the content of blob id (for a symbolic link, its target).
	Blob(ctx context.Context, id string) ([]byte, error)
}

// File is a file the judge adds to a view that no tree holds: a held-out test, a
// canary.
type File struct {
	// Rel is slash-separated and relative to the view's root; it never climbs out.
	Rel     string
	Content []byte
	// Mode is the file's permission bits (0o644 when zero).
	Mode fs.FileMode
}
