package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// PartFunc computes the judge's version of a file protected in part: the worker's
// content with the protected part (rule.Part) as it is in base, and the parts the
// worker changed. base or worker is nil when that side has no such file; names are
// the scripts or targets the contract runs. See runner/judge/fileparts.
type PartFunc func(file, part string, base, worker []byte, names []string) (judged []byte, changed []string, err error)

// judgeProtected decides what the judge's view shows at rel, a path whose base version
// was and worker version now may differ: nil when no rule protects rel or the
// protected file (or every protected part of it) is as it was; else the change to
// report and the judged entry (the base's version, or for a file protected in part the
// worker's with the protected parts as they were at base).
func judgeProtected(rules []Rule, rel string, was, now entry, parts PartFunc, names []string, limit int) (*models.ProtectedChange, entry) {
	whole, partRules := classify(rules, rel)
	if !whole && len(partRules) == 0 {
		return nil, entry{}
	}
	judged, changedParts := was, []string(nil)
	if !whole && parts != nil && was.kind != symlink && now.kind == regular {
		judged = now
		for _, r := range partRules {
			out, ch, err := parts(rel, r.Part, nilIfAbsent(was), judged.content, names)
			if err != nil {
				// A part that cannot be read (a base that is not JSON, a file over
				// the bound): the whole file is protected instead.
				judged, changedParts = was, []string{"the whole file (" + err.Error() + ")"}
				break
			}
			judged.content = out
			changedParts = append(changedParts, ch...)
		}
		if len(changedParts) == 0 || digest(judged) == digest(now) {
			return nil, entry{}
		}
	} else if digest(was) == digest(now) {
		return nil, entry{}
	}
	c := models.ProtectedChange{Path: rel, Change: models.ChangeChanged, Parts: changedParts}
	switch {
	case was.kind == absent && len(changedParts) == 0:
		c.Change = models.ChangeAdded
	case now.kind == absent:
		c.Change = models.ChangeDeleted
	}
	c.Diff = diff(judged, now, limit)
	return &c, judged
}

// nilIfAbsent is e's content for a PartFunc: nil when the side has no such file, never
// nil for an empty one.
func nilIfAbsent(e entry) []byte {
	if e.kind == absent {
		return nil
	}
	if e.content == nil {
		return []byte{}
	}
	return e.content
}

// diff is a short line diff from the judged version to the worker's, or a line saying
// what changed when either is not text.
func diff(judged, worker entry, limit int) string {
	describe := func(e entry) string {
		switch e.kind {
		case absent:
			return ""
		case symlink:
			return "(a symbolic link to " + strconv.Quote(string(e.content)) + ")\n"
		}
		if !utf8.Valid(e.content) {
			return fmt.Sprintf("(%d bytes of binary data)\n", len(e.content))
		}
		return string(e.content)
	}
	d := models.TextDiff(describe(judged), describe(worker), limit)
	if d == "" && judged.mode != worker.mode {
		d = fmt.Sprintf("mode %o -> %o", judged.mode, worker.mode)
	}
	return d
}

// digest identifies an entry's kind, executable bits and bytes: what git's tree
// records of a file.
func digest(e entry) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%o:", e.kind, e.mode&0o111)
	h.Write(e.content)
	return hex.EncodeToString(h.Sum(nil))
}
