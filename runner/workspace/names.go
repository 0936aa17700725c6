package workspace

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
)

// maxBranchLen bounds a branch name: long enough for any prefix and task id, short
// enough for every file system's name limit once it is a file under refs/heads.
const maxBranchLen = 200

// ValidBranch reports whether name is a branch name the manager will give git: a
// subset of what `git check-ref-format --branch` accepts, decided without running git,
// so a hostile name never reaches a git command line. Allowed are ASCII letters,
// digits, '.', '_', '-' and '/' between non-empty components; the name starts with a
// letter, digit or '_'; no component starts with '.' or ends with ".lock"; no "..",
// no trailing '.' or '/'; not "HEAD" and not under "refs/" (a full ref name given as a
// branch name would name another ref). The error is a *models.Error with code
// EINVALID.
func ValidBranch(name string) error {
	bad := func(why string) error {
		return &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("%q is not a usable branch name: %s", name, why),
			Fields: map[string]string{"branch": why}}
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxBranchLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxBranchLen))
	case name == "HEAD":
		return bad("HEAD is not a branch")
	case strings.HasPrefix(name, "refs/"):
		return bad("give the branch name, not a ref under refs/")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/'
		if !ok {
			return bad(fmt.Sprintf("character %q is not allowed (letters, digits, '.', '_', '-' and '/' are)", rune(c)))
		}
	}
	if c := name[0]; c == '-' || c == '.' || c == '/' {
		return bad("must start with a letter, a digit or '_'")
	}
	if strings.Contains(name, "..") {
		return bad(`".." is not allowed`)
	}
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") {
		return bad("must not end with '/' or '.'")
	}
	for _, part := range strings.Split(name, "/") {
		switch {
		case part == "":
			return bad("empty path component")
		case strings.HasPrefix(part, "."):
			return bad("a component starts with '.'")
		case strings.HasSuffix(part, ".lock"):
			return bad(`a component ends with ".lock"`)
		}
	}
	return nil
}

// isCommitID reports whether s is a full commit id (SHA-1 or SHA-256, lower case).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// revArg turns a revision a caller names — a full commit id, or a branch name — into
// the argument git gets: the id as it is, a branch as refs/heads/<name>, so that a tag
// or a file of the same name can never be taken for it. Anything else is refused with
// EINVALID, before git runs.
func revArg(s string) (string, error) {
	if isCommitID(s) {
		return s, nil
	}
	if err := ValidBranch(s); err != nil {
		return "", &models.Error{Code: models.EINVALID,
			Message: fmt.Sprintf("%q is neither a full commit id nor a usable branch name", s),
			Fields:  map[string]string{"revision": "a full commit id or a branch name"}}
	}
	return "refs/heads/" + s, nil
}

// Identity is who a commit names as its author or committer.
type Identity struct {
	Name  string
	Email string
}

// DefaultCommitter is the committer of the commits the manager makes when the caller
// names none: the agent is the author of its work, Countersign the one who committed
// it after verification.
var DefaultCommitter = Identity{Name: "Countersign", Email: "countersign@localhost"}

// check refuses an identity git would refuse or misread: empty, over 200 bytes, or
// holding '<', '>', a newline or another control character (an email also no space).
func (id Identity) check(field string) error {
	bad := func(why string) error {
		return &models.Error{Code: models.EINVALID, Message: field + " is not usable: " + why,
			Fields: map[string]string{field: why}}
	}
	if strings.TrimSpace(id.Name) == "" || strings.TrimSpace(id.Email) == "" {
		return bad("name and email are required")
	}
	if len(id.Name) > 200 || len(id.Email) > 200 {
		return bad("longer than 200 bytes")
	}
	for _, s := range []string{id.Name, id.Email} {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "<>") || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return bad("must not hold '<', '>' or control characters")
		}
	}
	if strings.ContainsAny(id.Email, " \t") {
		return bad("the email must not hold spaces")
	}
	return nil
}

// env is id as the environment variables git reads an author or committer from.
func (id Identity) env(role string) []string {
	return []string{"GIT_" + role + "_NAME=" + id.Name, "GIT_" + role + "_EMAIL=" + id.Email}
}

// Trailer is one "Key: value" line at the end of a commit message.
type Trailer struct {
	Key   string
	Value string
}

// Trailer keys the runner puts on a verified commit.
const (
	TrailerTask       = "Countersign-Task"
	TrailerAttempt    = "Countersign-Attempt"
	TrailerVerifiedBy = "Countersign-Verified-By"
)

// Bounds on what goes into a commit message.
const (
	maxSubject    = 100       // runes; longer subjects are cut with "…"
	maxBody       = 16 << 10  // bytes
	maxTrailerVal = 500       // bytes
	maxMessage    = 256 << 10 // bytes, the whole message
)

// oneLine makes s a single line: control characters (newlines included) become
// spaces, runs of spaces one, the ends trimmed, and it is cut to max runes.
func oneLine(s string, max int) string {
	s = strings.ToValidUTF8(s, "�")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

// message builds a commit message: the subject on one line, the body (NUL and other
// control characters but newline and tab removed, bounded), and the trailers in their
// own last paragraph, in the order given, so `git interpret-trailers` and
// %(trailers) read them. Keys are letters, digits and '-'; values one line.
func message(subject, body string, trailers []Trailer) (string, error) {
	subj := oneLine(subject, maxSubject)
	if subj == "" {
		return "", &models.Error{Code: models.EINVALID, Message: "the commit needs a subject",
			Fields: map[string]string{"subject": "empty"}}
	}
	var b strings.Builder
	b.WriteString(subj)
	b.WriteString("\n")
	body = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(body, "�"))
	body = strings.TrimSpace(body)
	if len(body) > maxBody {
		body = strings.ToValidUTF8(body[:maxBody], "") + "\n[…]"
	}
	if body != "" {
		b.WriteString("\n" + body + "\n")
	}
	for i, t := range trailers {
		if !validTrailerKey(t.Key) {
			return "", &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("trailer key %q is not usable", t.Key),
				Fields: map[string]string{"trailers": "keys are letters, digits and '-', starting with a letter"}}
		}
		v := oneLine(t.Value, maxTrailerVal)
		if v == "" {
			return "", &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("trailer %s has no value", t.Key),
				Fields: map[string]string{"trailers": "every trailer needs a value"}}
		}
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString(t.Key + ": " + v + "\n")
	}
	if b.Len() > maxMessage {
		return "", &models.Error{Code: models.EINVALID, Message: "the commit message is too long",
			Fields: map[string]string{"trailers": "too many"}}
	}
	return b.String(), nil
}

func validTrailerKey(k string) bool {
	if k == "" || len(k) > 64 || !(k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
