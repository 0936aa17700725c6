package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// ChangedFile is a file a commit changed against a base: its path (slash-separated,
// relative to the repository's top) and its git blob id in the commit, or "" when the
// commit deleted it. Regular says the commit holds a regular file there (not a link or
// a submodule), whose content a recheck can hash.
type ChangedFile struct {
	Path    string
	Blob    string
	Regular bool
}

// Changed lists the files commit changed against base (both full commit ids or branch
// names), renames as a deletion and an addition, with their blob ids in commit. No
// external diff program runs; confined, git only reads the checkout.
func (m *Manager) Changed(ctx context.Context, repo, base, commit string) ([]ChangedFile, error) {
	a, b, repo, err := twoRevs(repo, base, commit)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if _, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, stdout: &out,
		args: []string{"diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", a, b, "--"}}); err != nil {
		return nil, err
	}
	return parseDiffTree(out.Bytes())
}

// parseDiffTree reads `git diff-tree -r -z` output: for each file a header
// ":<old mode> <new mode> <old blob> <new blob> <status>" and the path, each ended by
// a NUL.
func parseDiffTree(b []byte) ([]ChangedFile, error) {
	fields := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(fields) == 1 && fields[0] == "" {
		return nil, nil
	}
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("workspace: unexpected diff-tree output (%d fields)", len(fields))
	}
	out := make([]ChangedFile, 0, len(fields)/2)
	for i := 0; i < len(fields); i += 2 {
		h := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(h) != 5 {
			return nil, fmt.Errorf("workspace: unexpected diff-tree line %q", fields[i])
		}
		f := ChangedFile{Path: fields[i+1]}
		if strings.Trim(h[3], "0") != "" {
			f.Blob = h[3]
			f.Regular = h[1] == "100644" || h[1] == "100755"
		}
		out = append(out, f)
	}
	return out, nil
}
