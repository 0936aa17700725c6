package forge

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxWebhookBody caps how much of a webhook delivery is read: forge payloads are far
// smaller, and an unauthenticated sender must not make us buffer more.
const maxWebhookBody = 10 << 20

// maxDescription is the forges' limit on a commit status description, in runes.
const maxDescription = 140

// basicHeader is the HTTP Basic Authorization header for user:token.
func basicHeader(user, token string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+token))
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// readCapped reads a webhook body, refusing one over maxWebhookBody.
func readCapped(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, errors.New("forge webhook: empty body")
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return nil, fmt.Errorf("forge webhook: read body: %w", err)
	}
	if len(b) > maxWebhookBody {
		return nil, fmt.Errorf("forge webhook: body over %d bytes refused", maxWebhookBody)
	}
	return b, nil
}

// scrubbed wraps an API error so its text never carries the token (a misbehaving
// server or proxy may echo request headers into an error body). The original error
// stays reachable with errors.As/Is for status checks.
type scrubbed struct {
	err   error
	token string
}

func (s *scrubbed) Error() string {
	msg := s.err.Error()
	if s.token != "" {
		msg = strings.ReplaceAll(msg, s.token, "[token]")
	}
	return msg
}

func (s *scrubbed) Unwrap() error { return s.err }

// wrapErr names the operation and scrubs the token from err's text.
func wrapErr(op, token string, err error) error {
	if err == nil {
		return nil
	}
	return &scrubbed{err: fmt.Errorf("forge: %s: %w", op, err), token: token}
}

// lineComment formats one line comment of a review as "path:line: text".
func lineComment(path string, line int64, text string) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d: %s", path, line, strings.TrimSpace(text))
	}
	return fmt.Sprintf("%s: %s", path, strings.TrimSpace(text))
}

// joinBody is a review's body followed by its line comments, one a line.
func joinBody(body string, lines []string) string {
	parts := make([]string, 0, len(lines)+1)
	if b := strings.TrimSpace(body); b != "" {
		parts = append(parts, b)
	}
	parts = append(parts, lines...)
	return strings.Join(parts, "\n")
}

// splitRepo splits "owner/name".
func splitRepo(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("forge: repo %q is not owner/name", repo)
	}
	return owner, name, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
