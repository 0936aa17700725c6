package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Excluding returns p with every granted hierarchy that contains dir replaced by its
// contents minus the way down to dir, so that no grant reaches dir (the data dir,
// with the database) however broad it is: a grant of /opt for a data dir under
// /opt/countersign becomes the other entries of /opt and of /opt/countersign.
// Grants inside dir (a workspace, an agent's home) stay as they are. Landlock can only
// add rights, never carve a hole in a hierarchy, hence the expansion.
func (p Policy) Excluding(dir string) Policy {
	return p.excluding(realPath(dir), realPath)
}

// excluding is Excluding for a dir already resolved, resolving grants with resolve.
func (p Policy) excluding(dir string, resolve func(string) string) Policy {
	if dir == "" || dir == "/" {
		return p
	}
	p.ReadExec = excludeFrom(p.ReadExec, dir, resolve)
	p.ReadWrite = excludeFrom(p.ReadWrite, dir, resolve)
	return p
}

func excludeFrom(paths []string, dir string, resolve func(string) string) []string {
	out := make([]string, 0, len(paths))
	for _, path := range paths {
		real := resolve(path)
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

// maxResolved bounds the cache of resolved grants: the system paths every run shares
// stay in it, each attempt's own directories pass through.
const maxResolved = 1024

// resolver caches realPath for the grants of every run: resolving the twenty-odd
// system paths on each start cost 0.1 ms, a third of the sandbox's whole price.
type resolver struct {
	mu    sync.Mutex
	cache map[string]string
}

func (r *resolver) resolve(p string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if real, ok := r.cache[p]; ok {
		return real
	}
	if r.cache == nil || len(r.cache) >= maxResolved {
		r.cache = make(map[string]string)
	}
	real := realPath(p)
	r.cache[p] = real
	return real
}
