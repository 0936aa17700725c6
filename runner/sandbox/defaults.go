package sandbox

import (
	"os"
	"path/filepath"
)

// systemDirs are read and executed by every confined run: the programs, libraries and
// configuration a shell, git or a compiler needs.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// SystemReadPaths returns the hierarchies every confined run may read and execute:
// the system directories, each directory on PATH, the install a shims directory on
// PATH belongs to (a version manager's shims run programs kept beside them:
// ~/.pyenv/shims needs ~/.pyenv), and the installs of the Go and Node toolchains found
// on PATH (their root, which holds the standard library or the global modules beside
// the binary).
func SystemReadPaths(path string) []string {
	out := append([]string{}, systemDirs...)
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		out = append(out, dir)
		// A version manager's shims (pyenv, rbenv, nodenv) run what lies beside them;
		// a plain bin directory's parent may hold anything (~/.cargo its credentials).
		if filepath.Base(dir) == "shims" {
			if parent := filepath.Dir(dir); !isSystemPrefix(parent) {
				out = append(out, parent)
			}
		}
	}
	for _, tool := range []string{"go", "node"} {
		if root := toolRoot(tool, path); root != "" {
			out = append(out, root)
		}
	}
	return Policy{ReadExec: out}.Normalize().ReadExec
}

// isSystemPrefix reports whether dir is one whose whole tree must not be granted just
// because a bin directory below it is on PATH (/, /usr, /usr/local).
func isSystemPrefix(dir string) bool {
	switch filepath.Clean(dir) {
	case "/", "/usr", "/usr/local":
		return true
	}
	return false
}

// toolRoot finds tool on path and returns the directory above its bin directory
// (/usr/local/go for /usr/local/go/bin/go), or "" when it is not found or lies
// directly in a system directory.
func toolRoot(tool, path string) string {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, tool)
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return ""
		}
		bin := filepath.Dir(real)
		if filepath.Base(bin) != "bin" {
			return ""
		}
		root := filepath.Dir(bin)
		if root == "/" || root == "/usr" {
			return ""
		}
		return root
	}
	return ""
}
