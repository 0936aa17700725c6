package judge

// The dependencies a candidate changed, for the report of a task whose contract
// lets them change (verification.dependencies_may_change): the judge installs them
// itself, and the people who read the report see which ones, and which point at a
// path inside the workspace instead of a published version (a worker's own copy of
// the assertion library swaps what the tests check with).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/countersign/countersign/models/formats/pkgjson"
	"golang.org/x/mod/modfile"
)

// LocalPath marks a dependency entry that resolves to a path, not a published
// version: "chai: ^4.3.0 -> file:../fake-chai (a local path)".
const LocalPath = " (a local path)"

// ChangedDependencies lists, sorted, the dependencies that differ between the base
// and the candidate in the manifest or lockfile file (a path relative to the
// workspace), one entry per dependency: "package.json: chai ^4.3.0 -> ^5.0.0",
// "go.mod: github.com/stretchr/testify added v1.9.0", "go.mod: replace
// github.com/stretchr/testify => ./fake (a local path)", "requirements.txt: requests
// removed". base or cand nil means the file does not exist there. It reads
// package.json (dependencies, devDependencies, optionalDependencies,
// peerDependencies, overrides, resolutions), package-lock.json and
// npm-shrinkwrap.json (their packages), go.mod (require and replace) and
// requirements*.txt and constraints*.txt (one requirement a line); any other file
// that differs is one entry, "yarn.lock changed". A file that cannot be read as its
// format is reported as changed too, never silently.
func ChangedDependencies(file string, base, cand []byte) []string {
	if bytes.Equal(base, cand) && (base == nil) == (cand == nil) {
		return nil
	}
	var bm, cm map[string]string
	var ok1, ok2 bool
	name := path.Base(file)
	switch {
	case name == "package.json":
		bm, ok1 = pkgjson.Dependencies(base)
		cm, ok2 = pkgjson.Dependencies(cand)
	case name == "package-lock.json" || name == "npm-shrinkwrap.json":
		bm, ok1 = lockDeps(base)
		cm, ok2 = lockDeps(cand)
	case name == "go.mod":
		bm, ok1 = goModDeps(base)
		cm, ok2 = goModDeps(cand)
	case isRequirements(name):
		bm, ok1 = requirementDeps(base)
		cm, ok2 = requirementDeps(cand)
	default:
		return []string{file + " changed"}
	}
	if !ok1 || !ok2 {
		return []string{file + " changed (not readable as " + name + ")"}
	}
	return diffDeps(file, bm, cm)
}

// isRequirements reports whether name is a pip requirements or constraints file.
func isRequirements(name string) bool {
	return strings.HasSuffix(name, ".txt") && (strings.HasPrefix(name, "requirements") || strings.HasPrefix(name, "constraints"))
}

func diffDeps(file string, base, cand map[string]string) []string {
	var out []string
	for k, bv := range base {
		cv, ok := cand[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s removed", file, k))
		case cv != bv:
			out = append(out, fmt.Sprintf("%s: %s %s -> %s%s", file, k, bv, cv, localMark(cv)))
		}
	}
	for k, cv := range cand {
		if _, ok := base[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %s added %s%s", file, k, cv, localMark(cv)))
		}
	}
	sort.Strings(out)
	return out
}

var localSpec = regexp.MustCompile(`^(file:|link:|portal:|workspace:|\.{0,2}/|~/)|^-e\s|@\s*file:|^=> \.{0,2}/|^\(link\)`)

// localMark is LocalPath when a dependency's new value resolves to a path.
func localMark(v string) string {
	if localSpec.MatchString(strings.TrimSpace(v)) {
		return LocalPath
	}
	return ""
}

// lockDeps reads an npm lockfile's packages: "node_modules/chai" -> "4.3.10".
func lockDeps(data []byte) (map[string]string, bool) {
	out := map[string]string{}
	if data == nil {
		return out, true
	}
	var doc struct {
		Packages map[string]struct {
			Version  string `json:"version"`
			Resolved string `json:"resolved"`
			Link     bool   `json:"link"`
		} `json:"packages"`
		Dependencies map[string]struct {
			Version string `json:"version"`
		} `json:"dependencies"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil, false
	}
	for k, p := range doc.Packages {
		if k == "" {
			continue // the project itself
		}
		v := p.Version
		switch {
		case p.Link:
			v = "(link) " + p.Resolved
		case strings.HasPrefix(p.Resolved, "file:") || (p.Resolved != "" && !strings.Contains(p.Resolved, "://")):
			v = p.Resolved
		}
		out[k] = v
	}
	for k, d := range doc.Dependencies { // lockfileVersion 1
		if _, ok := out["node_modules/"+k]; !ok {
			out["node_modules/"+k] = d.Version
		}
	}
	return out, true
}

// goModDeps reads go.mod's require and replace lines.
func goModDeps(data []byte) (map[string]string, bool) {
	out := map[string]string{}
	if data == nil {
		return out, true
	}
	// Parse, not ParseLax: the lax parser skips replace lines, which are the point.
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return nil, false
	}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		old := r.Old.Path
		if r.Old.Version != "" {
			old += " " + r.Old.Version
		}
		nv := r.New.Path
		if r.New.Version != "" {
			nv += " " + r.New.Version
		}
		out["replace "+old] = "=> " + nv
	}
	return out, true
}

var (
	reqName        = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)`)
	nameSeparators = regexp.MustCompile(`[-_.]+`) // PEP 503 name normalization
)

// requirementDeps reads a requirements file: one requirement a line, keyed by its
// normalized project name (or the whole line for options, paths and URLs).
func requirementDeps(data []byte) (map[string]string, bool) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cont string
	for sc.Scan() {
		line := cont + sc.Text()
		cont = ""
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := reqName.FindString(line)
		if m == "" || strings.HasPrefix(line, ".") {
			out[line] = line
			continue
		}
		key := strings.ToLower(nameSeparators.ReplaceAllString(m, "-"))
		v := strings.TrimSpace(line[len(m):])
		if v == "" {
			v = "(any version)"
		}
		out[key] = v
	}
	return out, sc.Err() == nil
}
