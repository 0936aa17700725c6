package judge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// gitTrees is a test-only Trees over plain git in a repository: what the judge's
// object store (Store) provides in the runner.
type gitTrees struct{ dir string }

func (g gitTrees) git(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %v: %w: %s", args, err, stderr.String())
	}
	return out, nil
}

func (g gitTrees) Changes(ctx context.Context, from, to string) ([]Change, error) {
	out, err := g.git(ctx, "diff-tree", "-r", "-z", "--no-renames", from, to)
	if err != nil {
		return nil, err
	}
	var changes []Change
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) < 5 {
			return nil, fmt.Errorf("diff-tree record %q", fields[i])
		}
		om, _ := strconv.ParseUint(meta[0], 8, 32)
		nm, _ := strconv.ParseUint(meta[1], 8, 32)
		c := Change{Path: fields[i+1], OldMode: uint32(om), NewMode: uint32(nm), OldBlob: meta[2], NewBlob: meta[3]}
		if om == 0 {
			c.OldBlob = ""
		}
		if nm == 0 {
			c.NewBlob = ""
		}
		changes = append(changes, c)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

func (g gitTrees) Blob(ctx context.Context, id string) ([]byte, error) {
	return g.git(ctx, "cat-file", "blob", id)
}

// gitRun runs git in dir with a fixed identity.
func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitAll commits everything git sees in dir and returns the commit.
func commitAll(t testing.TB, dir, msg string) string {
	t.Helper()
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return gitRun(t, dir, "rev-parse", "HEAD")
}

// treeState describes every entry under root (not following links, without the
// top-level .git): "d" for a directory, "l:<target>" for a link, "f<x>:<content>"
// for a file, x saying whether it is executable.
func treeState(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "l:" + l
		case info.IsDir():
			out[rel] = "d"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("f%v:%s", info.Mode()&0o111 != 0, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeDigest identifies everything under root byte for byte: paths, kinds, modes,
// contents, link targets and modification times.
func treeDigest(t testing.TB, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%q %v %d ", rel, info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diffStates lists the differences between two tree states, for failure messages.
func diffStates(got, want map[string]string) []string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			out = append(out, "missing "+k+" = "+strconv.Quote(w))
		} else if g != w {
			out = append(out, k+" = "+strconv.Quote(g)+", want "+strconv.Quote(w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "extra "+k+" = "+strconv.Quote(g))
		}
	}
	sort.Strings(out)
	return out
}
