package hostile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"mime/multipart"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// class is a kind of hostile value.
type class int

const (
	classNUL      class = iota // a NUL byte inside text
	classBadUTF8               // bytes that are not UTF-8
	classOverlong              // text far longer than any field wants
	classTraverse              // a path climbing out (../, absolute, encoded)
	classMarkup                // markup and quotes
	classNumber                // a number out of every range, negative, fractional
	classPlain                 // an ordinary value
	numClasses
)

// unstorable reports whether the class is text no database may hold: a request
// carrying it in its path, query or form must be refused.
func (c class) unstorable() bool { return c == classNUL || c == classBadUTF8 }

var badUTF8 = []string{"\xff", "\xc3\x28", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80", "\xc0\xaf", "\xe2\x82", "\x80"}

var hugeNumbers = []string{"9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999",
	"2147483648", "-1", "0", "1e30", "-1e400", "1.5", "0x10", "NaN", "4294967296", "-2147483649"}

var traversals = []string{"../../../etc/", "..", "/etc/passwd/", "a/../../b/", "..\\..\\windows\\", "/", "./../", "~/", "%2e%2e/%2e%2e/"}

// gen makes hostile values from a seeded source, so a failure replays. Every string
// it makes carries the request's marker, to find it in the database afterwards.
type gen struct {
	r      *rand.Rand
	marker string
}

// text is a string of class c that carries the marker.
func (g *gen) text(c class) string {
	m := g.marker
	switch c {
	case classNUL:
		return m + strings.Repeat("\x00", 1+g.r.IntN(3)) + "x"
	case classBadUTF8:
		return m + badUTF8[g.r.IntN(len(badUTF8))] + "y"
	case classOverlong:
		return m + strings.Repeat(string(rune('a'+g.r.IntN(26))), 4096<<g.r.IntN(7)) // 4 KiB to 256 KiB
	case classTraverse:
		return traversals[g.r.IntN(len(traversals))] + m
	case classMarkup:
		return `<script>alert("` + m + `")</script>'"&`
	case classNumber:
		return hugeNumbers[g.r.IntN(len(hugeNumbers))]
	}
	return m
}

// class picks a class, unstorable ones half the time.
func (g *gen) class() class {
	if g.r.IntN(2) == 0 {
		return class(g.r.IntN(2))
	}
	return class(g.r.IntN(int(numClasses)))
}

// fieldNames are names the API's bodies, the forms and the tools read.
var fieldNames = []string{"title", "description", "brief", "name", "command", "workdir", "password", "summary", "notes",
	"reason", "assignee", "agent", "role", "roles", "kind", "url", "events", "secret", "yaml", "answer", "question",
	"token_name", "expires", "concurrency", "goal_id", "limit", "status", "next", "path", "target_branch"}

// numberFields are fields whose value is a JSON number.
var numberFields = map[string]bool{"goal_id": true, "concurrency": true, "limit": true}

// bodyFields are the fields the JSON routes, the forms and the MCP tools read, by
// route pattern (or tool), so that generated bodies get past "unknown field" to the
// checks and the store behind; other routes get fields from fieldNames.
var bodyFields = map[string][]string{
	"/api/v1/goals":               {"title", "description", "project"},
	"/api/v1/tasks":               {"title", "brief", "role", "assignee"},
	"/api/v1/agents":              {"name", "command", "workdir", "password"},
	"/api/v1/agents/:name":        {"command", "workdir"},
	"/api/v1/tasks/:id/:action":   {"summary", "notes", "reason", "assignee"},
	"/api/v1/tasks/:id/questions": {"question"},
	"/api/v1/goals/:id/reject":    {"reason"},
	"/api/v1/goals/:id/verify":    {"notes"},
	"/goals":                      {"title", "description", "project"},
	"/agents":                     {"name", "command", "workdir", "password", "roles", "kind"},
	"create_goal":                 {"title", "description", "project"},
	"create_task":                 {"title", "brief", "role"},
	"ask_question":                {"question"},
	"reject_task":                 {"reason"},
	"submit_for_review":           {"summary"},
}

// fixed are valid values of the fields that must hold one for a body to be taken.
var fixed = map[string]string{"kind": "worker", "roles": "developer", "command": "true"}

// jsonBody is a JSON object of the fields the route (or tool) key reads, one of them
// hostile and the others plain, sometimes with a contract of hostile paths; invalid
// UTF-8 is written raw (encoding/json would replace it). bad says it carries
// unstorable text.
func (g *gen) jsonBody(key string) (string, bool) {
	fields, known := bodyFields[key]
	if !known {
		fields = []string{fieldNames[g.r.IntN(len(fieldNames))], fieldNames[g.r.IntN(len(fieldNames))]}
	}
	hostile := g.r.IntN(len(fields))
	var b strings.Builder
	bad := false
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		c := classPlain
		if i == hostile {
			c = g.class()
			bad = bad || c.unstorable()
		}
		b.WriteString(jsonString(f) + ":")
		switch {
		case numberFields[f] && c == classNumber:
			b.WriteString(hugeNumbers[g.r.IntN(len(hugeNumbers))]) // some are not JSON at all: 400
		case f == "roles" || f == "events":
			b.WriteString("[" + jsonString(g.text(c)) + "]")
		case c == classPlain && f == "name":
			b.WriteString(jsonString(strings.ToLower(g.marker)))
		default:
			b.WriteString(jsonString(g.text(c)))
		}
	}
	if key == "/api/v1/agents" {
		b.WriteString(`,"kind":"worker","roles":["developer"]`)
	}
	if (key == "/api/v1/tasks" || key == "create_task") && g.r.IntN(2) == 0 {
		c := g.class()
		bad = bad || c.unstorable()
		fmt.Fprintf(&b, `,"contract":{"completion":{"path":%s,"verify":[%s]},"verification":{"protect":[%s],"held_out":[{"path":%s,"content":"x"}]}}`,
			jsonString(g.text(c)), jsonString(g.text(c)), jsonString(g.text(c)), jsonString(g.text(c)))
	}
	b.WriteByte('}')
	return b.String(), bad && known
}

// jsonString quotes s as JSON does, except that bytes that are not UTF-8 stay raw.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// form is a form of the fields route reads (or a few from fieldNames), one hostile,
// with the CSRF token csrf (none when ""), urlencoded or multipart; bad says it
// carries unstorable text.
func (g *gen) form(route, csrf string) (body, contentType string, bad bool) {
	vals := url.Values{}
	if csrf != "" {
		vals.Set("csrf", csrf)
	}
	fields, known := bodyFields[route]
	if !known {
		fields = []string{fieldNames[g.r.IntN(len(fieldNames))], fieldNames[g.r.IntN(len(fieldNames))]}
	}
	hostile := g.r.IntN(len(fields))
	for i, f := range fields {
		switch {
		case i == hostile:
			c := g.class()
			bad = bad || c.unstorable()
			vals.Add(f, g.text(c))
		case fixed[f] != "":
			vals.Add(f, fixed[f])
		case f == "name":
			vals.Add(f, strings.ToLower(g.marker))
		default:
			vals.Add(f, g.marker)
		}
	}
	if g.r.IntN(4) > 0 {
		return vals.Encode(), "application/x-www-form-urlencoded", bad
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range vals[k] {
			_ = mw.WriteField(k, v)
		}
	}
	_ = mw.Close()
	return buf.String(), mw.FormDataContentType(), bad
}

// queryNames are query parameters the routes read.
var queryNames = []string{"limit", "after", "version", "format", "next", "goal", "state", "q", "page", "assignee", "v"}

// query is a query string of one or two hostile parameters; bad as for form.
func (g *gen) query() (string, bool) {
	vals := url.Values{}
	bad := false
	for range 1 + g.r.IntN(2) {
		c := g.class()
		bad = bad || c.unstorable()
		vals.Add(queryNames[g.r.IntN(len(queryNames))], g.text(c))
	}
	return vals.Encode(), bad
}

// param is a value for the path parameter name: usually a hostile one, sometimes the
// seeded goal's or task's id (ok) so that requests reach the handlers' own checks.
func (g *gen) param(name string, ok string) (string, bool) {
	if ok != "" && g.r.IntN(3) == 0 {
		return ok, false
	}
	c := g.class()
	if (strings.HasSuffix(name, "id") || name == "did" || name == "tid") && g.r.IntN(2) == 0 {
		c = classNumber
	}
	v := g.text(c)
	if c == classOverlong {
		v = v[:min(len(v), 2000)] // a request line stays readable
	}
	return v, c.unstorable()
}

// itoa is strconv.FormatInt for ids.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
