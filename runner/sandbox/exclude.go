package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// Excluding returns p with every granted hierarchy that contains dir replaced by its
// contents minus the way down to dir, so that no grant reaches dir (the data dir,
// with the database) however broad it is: a grant of /opt for a data dir under
// /opt/countersign becomes the other entries of /opt and of /opt/countersign.
// Grants inside dir (a workspace, an agent's home) stay as they are. Landlock can only
// add rights, never carve a hole in a hierarchy, hence the expansion.
func (p Policy) Excluding(dir string) Policy {
	dir = realPath(dir)
	if dir == "" || dir == "/" {
		return p
	}
	p.ReadExec = excludeFrom(p.ReadExec, dir)
	p.ReadWrite = excludeFrom(p.ReadWrite, dir)
	return p
}

func excludeFrom(paths []string, dir string) []string {
	out := make([]string, 0, len(paths))
	for _, path := range paths {
		real := realPath(path)
		if real == "" || !contains(real, dir) {
			out = append(out, path)
			continue
		}
		out = append(out, siblingsAlong(real, dir)...)
	}
	return out
}

// siblingsAlong lists, for each directory from top down to dir's parent, its entries
// except the one leading to dir.
func siblingsAlong(top, dir string) []string {
	var out []string
	for cur := top; cur != dir; {
		rest := strings.TrimPrefix(strings.TrimPrefix(dir, cur), "/")
		next, _, _ := strings.Cut(rest, "/")
		entries, err := os.ReadDir(cur)
		if err != nil {
			return out // unreadable: grant nothing more of it
		}
		for _, e := range entries {
			if e.Name() != next {
				out = append(out, filepath.Join(cur, e.Name()))
			}
		}
		cur = filepath.Join(cur, next)
	}
	return out
}

// contains reports whether dir is top or below it.
func contains(top, dir string) bool {
	return top == dir || top == "/" || strings.HasPrefix(dir, top+"/")
}

// realPath is p absolute and with symbolic links resolved, or "" when it does not
// exist.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ""
	}
	return real
}
