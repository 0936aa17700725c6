package models

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MaxPasswordBytes is the longest dashboard password accepted, in bytes: bcrypt reads
// no more than 72. A longer password is refused with a field error rather than
// pre-hashed or cut: cutting would let every password sharing its first 72 bytes sign
// in (the user would believe the rest counts); a pre-hash (SHA-256 then bcrypt) would
// change how every stored hash is checked, needing a second hash format beside the
// existing ones, for passphrases longer than 72 bytes — ten words or more — that
// nobody types into a login form. 72 bytes is 72 ASCII characters, fewer when a
// character takes several bytes in UTF-8; the message says bytes.
const MaxPasswordBytes = 72

// PasswordProblem says what is wrong with a new dashboard password, or "" when
// nothing is: at least MinPasswordLength characters, at most MaxPasswordBytes bytes,
// valid UTF-8 without NUL (what a form and JSON can carry back at sign-in).
func PasswordProblem(password string) string {
	switch {
	case utf8.RuneCountInString(password) < MinPasswordLength:
		return fmt.Sprintf("must be at least %d characters", MinPasswordLength)
	case len(password) > MaxPasswordBytes:
		return fmt.Sprintf("must be at most %d bytes (bcrypt reads no more): choose a shorter passphrase", MaxPasswordBytes)
	case !utf8.ValidString(password) || strings.IndexByte(password, 0) >= 0:
		return "must be valid UTF-8 text without NUL bytes"
	}
	return ""
}

// maxWorkdirLen bounds a workdir like a sandbox path (PATH_MAX).
const maxWorkdirLen = 4096

// WorkdirProblem says what is wrong with a worker agent's workdir, or "" when
// nothing is. The runner runs the agent's tasks in that directory (or in git
// worktrees of it), so it names the server's file system: it must be an absolute path
// (a relative one would depend on where the runner starts), without "." or ".."
// segments (what it names is what it says, no climbing out of a directory an admin
// glanced at), not "/" (the whole file system), without NUL and valid UTF-8, at most
// 4096 bytes. Empty is fine: a fresh directory per task. Where it may point beyond
// that is the admin's choice; docs/INPUT.md says what to consider.
func WorkdirProblem(dir string) string {
	switch {
	case dir == "":
		return ""
	case len(dir) > maxWorkdirLen:
		return fmt.Sprintf("must be at most %d bytes", maxWorkdirLen)
	case strings.IndexByte(dir, 0) >= 0:
		return "must not contain a NUL byte"
	case !utf8.ValidString(dir):
		return "must be valid UTF-8"
	case !filepath.IsAbs(dir):
		return "must be an absolute path (it names a directory on the runner's host)"
	}
	for _, seg := range strings.Split(dir, "/") {
		if seg == ".." || seg == "." {
			return "must not contain \".\" or \"..\" segments: name the directory itself"
		}
	}
	if filepath.Clean(dir) == "/" {
		return "\"/\" would run the agent in the whole file system"
	}
	return ""
}
