package workspace

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// corruptObjectError is an object whose content does not hash to its name.
type corruptObjectError struct {
	oid, why string
}

func (e *corruptObjectError) Error() string {
	return fmt.Sprintf("object %s in the repository %s", short(e.oid), e.why)
}

// verifyObjects checks that every object reachable from tip and not from base — what
// a merge of tip into base brings in — hashes to its id. git trusts its object store
// when it reads (a pack's index, a loose object's file name), and a worker may write
// that store: it could plant, under the id of a file it wrote, other content, which the
// runner's commit would then name without writing (git skips objects it believes it
// has) and a checkout would write out. Reading every new object once and hashing it
// is what `git fsck` would do for them. Confined, git only reads the checkout.
func (m *Manager) verifyObjects(ctx context.Context, repo, tip, base string) error {
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"rev-parse", "--show-object-format"}})
	if err != nil {
		return err
	}
	var newHash func() hash.Hash
	switch f := strings.TrimSpace(string(out)); f {
	case "sha1":
		newHash = sha1.New
	case "sha256":
		newHash = sha256.New
	default:
		return fmt.Errorf("object format %q", f)
	}
	list, err := m.run(ctx, gitRun{dir: repo, read: []string{repo},
		args: []string{"rev-list", "--objects", "--no-object-names", tip, "--not", base}})
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(list)) == 0 {
		return nil
	}
	v := &batchVerifier{newHash: newHash}
	if _, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, stdin: list, stdout: v,
		args: []string{"cat-file", "--batch"}}); err != nil {
		return err
	}
	if v.err != nil {
		return v.err
	}
	if v.state != 0 || len(v.buf) != 0 {
		return fmt.Errorf("git cat-file --batch: output cut short")
	}
	if want := bytes.Count(list, []byte{'\n'}); v.objects != want {
		return fmt.Errorf("git cat-file --batch: %d objects for %d asked", v.objects, want)
	}
	return nil
}

// batchVerifier reads `git cat-file --batch` output as it streams ("<oid> <type>
// <size>\n<content>\n" per object, "<oid> missing\n" for none) and hashes each object
// as git names it ("<type> <size>\0<content>"), keeping only one header in memory.
type batchVerifier struct {
	newHash func() hash.Hash
	buf     []byte // a header being read
	state   int    // 0 header, 1 content, 2 the newline after it
	oid     string
	left    int64
	h       hash.Hash
	objects int
	err     error // the first mismatch or malformed output
}

func (v *batchVerifier) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && v.err == nil {
		switch v.state {
		case 0:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				if len(v.buf)+len(p) > 1024 {
					v.err = fmt.Errorf("git cat-file --batch: header too long")
					return n, nil
				}
				v.buf = append(v.buf, p...)
				return n, nil
			}
			header := string(append(v.buf, p[:i]...))
			v.buf, p = v.buf[:0], p[i+1:]
			fields := strings.Fields(header)
			if len(fields) == 2 && fields[1] == "missing" {
				v.err = &corruptObjectError{oid: fields[0], why: "is missing"}
				return n, nil
			}
			if len(fields) != 3 {
				v.err = fmt.Errorf("git cat-file --batch: header %q", header)
				return n, nil
			}
			size, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil || size < 0 {
				v.err = fmt.Errorf("git cat-file --batch: header %q", header)
				return n, nil
			}
			v.oid, v.left, v.h = fields[0], size, v.newHash()
			fmt.Fprintf(v.h, "%s %d\x00", fields[1], size)
			v.state = 1
			if size == 0 {
				v.state = 2
			}
		case 1:
			k := int64(len(p))
			if k > v.left {
				k = v.left
			}
			v.h.Write(p[:k])
			v.left -= k
			p = p[k:]
			if v.left == 0 {
				v.state = 2
			}
		case 2:
			if p[0] != '\n' {
				v.err = fmt.Errorf("git cat-file --batch: no newline after object %s", v.oid)
				return n, nil
			}
			p = p[1:]
			if got := hex.EncodeToString(v.h.Sum(nil)); got != v.oid {
				v.err = &corruptObjectError{oid: v.oid, why: "does not hash to its name (content planted under another object's id)"}
				return n, nil
			}
			v.objects++
			v.state = 0
		}
	}
	return n, nil
}
