package contract

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/countersign/countersign/models/formats/glob"
	"github.com/countersign/countersign/models/formats/ini"
	"github.com/countersign/countersign/models/formats/makefile"
	"github.com/countersign/countersign/models/formats/pkgjson"
	"github.com/countersign/countersign/models/formats/toml"
)

// Bounds of DetectWorkspace: a workspace is read, never trusted.
const (
	// MaxWorkspaceEntries bounds how many top-level names are listed.
	MaxWorkspaceEntries = 4096
	// MaxManifestBytes bounds how much of package.json, pyproject.toml, setup.cfg,
	// tox.ini or a Makefile is read.
	MaxManifestBytes = 256 << 10
)

// ConfigTools are the tools a Condition's Config may name, and where each is
// recognised as configured: its own files, a table or section of a shared one, or
// a mention in a shared one. pytest's probes stay substring checks on purpose: a
// mention anywhere (a dependency, a [tool:pytest] section, a tox command) is
// taken as its setup. A probe that means "this table/section exists" reads the
// file with the one TOML or INI reader (models/formats/toml, models/formats/ini),
// so a comment or a string holding "[tool.ruff]" does not count.
var ConfigTools = map[string][]ConfigProbe{
	"pytest": {{File: "pytest.ini"}, {File: "conftest.py"}, {File: "pyproject.toml", Contains: "pytest"},
		{File: "setup.cfg", Contains: "pytest"}, {File: "tox.ini", Contains: "pytest"}},
	"ruff": {{File: "ruff.toml"}, {File: ".ruff.toml"}, {File: "pyproject.toml", Table: "tool.ruff"}},
	// mypy reads setup.cfg only when it has a [mypy] section ([mypy-x.*] alone is
	// ignored).
	"mypy": {{File: "mypy.ini"}, {File: ".mypy.ini"}, {File: "pyproject.toml", Table: "tool.mypy"},
		{File: "setup.cfg", Section: "mypy"}},
}

// ConfigProbe recognises a configured tool: File exists at the top level and, when
// one of Contains, Table or Section is set, holds what it names.
type ConfigProbe struct {
	File     string
	Contains string // text anywhere in the file (a mention)
	Table    string // a TOML table, as a dotted key ("tool.ruff"), that tomllib would read
	Section  string // an INI section, by exact name, that iniconfig would read
}

// found reports whether the probe recognises its tool, given the top-level names
// and read, which gives a top-level file's contents.
func (p ConfigProbe) found(files []string, read func(name string) (string, bool)) bool {
	if p.Contains == "" && p.Table == "" && p.Section == "" {
		return slices.Contains(files, p.File)
	}
	s, ok := read(p.File)
	switch {
	case !ok:
		return false
	case p.Table != "":
		path, ok := toml.ParseKey(p.Table)
		return ok && toml.HasTable([]byte(s), path...)
	case p.Section != "":
		return ini.HasSection([]byte(s), p.Section)
	}
	return strings.Contains(s, p.Contains)
}

// makefileNames are the names make reads, in its order.
var makefileNames = []string{"GNUmakefile", "makefile", "Makefile"}

// DetectWorkspace reads what stack detection needs from dir: the top-level names (at
// most MaxWorkspaceEntries), the scripts of package.json, the targets of the Makefile,
// the tools configured in pyproject.toml, setup.cfg, tox.ini or their own files, and
// which tools are on PATH (lookPath, exec.LookPath when nil) — the tools named, plus
// those the default rules name.
//
// It only reads, and only at the top level: no subdirectory is listed and no file
// but package.json, pyproject.toml, setup.cfg, tox.ini and the Makefile is opened,
// each only when it is a regular file (not a symlink, FIFO or device) and only its
// first MaxManifestBytes. What cannot be read or parsed is recorded in Problems;
// the error is for a dir that cannot be listed at all.
func DetectWorkspace(dir string, lookPath func(string) (string, error), tools ...string) (WorkspaceFacts, error) {
	var f WorkspaceFacts
	d, err := os.Open(dir)
	if err != nil {
		return f, fmt.Errorf("workspace %s: %w", dir, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(MaxWorkspaceEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return f, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if len(entries) == MaxWorkspaceEntries {
		f.Problems = append(f.Problems, fmt.Sprintf("more than %d top-level entries: only the first were looked at", MaxWorkspaceEntries))
	}
	regular := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type().IsRegular():
			regular[e.Name()] = true
		}
		f.Files = append(f.Files, name)
	}
	sort.Strings(f.Files)

	contents := map[string]string{}
	read := func(name string) (string, bool) {
		if s, ok := contents[name]; ok {
			return s, true
		}
		if !regular[name] {
			return "", false
		}
		s, err := readBounded(filepath.Join(dir, name))
		if err != nil {
			f.Problems = append(f.Problems, name+": "+err.Error())
			regular[name] = false
			return "", false
		}
		contents[name] = s
		return s, true
	}

	if s, ok := read("package.json"); ok {
		scripts, err := packageScripts(s)
		if err != nil {
			f.Problems = append(f.Problems, "package.json: "+err.Error())
		}
		f.Scripts = slices.Sorted(maps.Keys(scripts))
		if len(scripts) > 0 {
			f.ScriptCommands = scripts
		}
	}
	for _, name := range makefileNames {
		if s, ok := read(name); ok {
			f.Targets = makefile.Targets([]byte(s))
			break
		}
	}
	f.detectConfigured(read)
	f.Tools = installedTools(lookPath, tools)
	return f, nil
}

// detectConfigured records, per tool of ConfigTools, the first file that shows the
// tool is set up: present at the top level, or (when a probe says what it must
// hold) holding that table, section or text. read gives a top-level file's
// contents, shared with the other steps so each file is read at most once.
func (f *WorkspaceFacts) detectConfigured(read func(name string) (string, bool)) {
	for _, tool := range slices.Sorted(maps.Keys(ConfigTools)) {
		for _, p := range ConfigTools[tool] {
			if p.found(f.Files, read) {
				f.setConfigured(tool, p.File)
				break
			}
		}
	}
}

// installedTools lists, sorted, which of the default rules' tools and the extra
// tools lookPath finds (nil: exec.LookPath), so a rule is only offered when the
// command it runs is there.
func installedTools(lookPath func(string) (string, error), extra []string) []string {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	want := dedupStrings(append(DefaultRules().Tools(), extra...))
	sort.Strings(want)
	var found []string
	for _, t := range want {
		if _, err := lookPath(t); err == nil {
			found = append(found, t)
		}
	}
	return found
}

func (f *WorkspaceFacts) setConfigured(tool, file string) {
	if f.Configured == nil {
		f.Configured = map[string]string{}
	}
	f.Configured[tool] = file
}

// readBounded reads the first MaxManifestBytes of a regular file without following a
// symlink and without blocking on a FIFO swapped in after the listing.
func readBounded(name string) (string, error) {
	file, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", errors.New("cannot be read")
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(file, MaxManifestBytes+1))
	if err != nil {
		return "", errors.New("cannot be read")
	}
	if len(b) > MaxManifestBytes {
		return "", fmt.Errorf("larger than %d KiB: not read", MaxManifestBytes>>10)
	}
	return string(b), nil
}

// npmPlaceholder is in the test script npm init writes, which always fails.
const npmPlaceholder = "no test specified"

// maxScriptCommand bounds each script command kept in WorkspaceFacts.ScriptCommands
// (facts are stored with what they decided).
const maxScriptCommand = 1024

// packageScripts returns package.json's scripts by name, each command cut to
// maxScriptCommand bytes, leaving out npm's placeholder test script.
func packageScripts(s string) (map[string]string, error) {
	scripts, err := pkgjson.Scripts([]byte(s))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, cmd := range scripts {
		if strings.TrimSpace(cmd) == "" || (name == "test" && strings.Contains(cmd, npmPlaceholder)) {
			continue
		}
		out[name] = Truncate(cmd, maxScriptCommand)
	}
	return out, nil
}

// validProtectGlob reports whether p is a protected-path glob: relative, forward
// slashes, no "..", each segment "**" or a path.Match pattern.
func validProtectGlob(p string) bool {
	if glob, part, ok := strings.Cut(p, "#"); ok {
		if !knownPart(part) {
			return false
		}
		p = glob
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || strings.ContainsRune(p, 0) {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == "" || seg == ".." || seg == "." {
			return false
		}
		if seg == "**" {
			continue
		}
		if !glob.Valid(seg) {
			return false
		}
	}
	return true
}
