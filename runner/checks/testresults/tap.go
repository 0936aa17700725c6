package testresults

import (
	"strconv"
	"strings"
)

// maxTAPDepth bounds the levels of subtests; deeper lines count at this depth.
const maxTAPDepth = 64

// tapResult is a test line read, waiting for the line of the subtest that holds it.
type tapResult struct {
	name   string
	status Status
	msg    message
}

// tapLevel is one level of subtests (indentation / 4).
type tapLevel struct {
	results []*tapResult
	plan    int // -1 when no plan was read
	count   int
	header  string // the "# Subtest: name" last announced at this level
	open    bool   // that subtest has not reported yet
}

type tapState struct {
	levels     []*tapLevel
	last       *tapResult // the test line just read, for a YAML block after it
	lastIndent int
	yaml       *tapResult // the test whose YAML block is being read
	yamlIndent int
}

// parseTAP reads TAP versions 13 and 14 as node --test --test-reporter=tap prints
// it: "ok N - desc" and "not ok N - desc", "# SKIP" and "# TODO" directives (both
// count as skipped), "# Subtest: name" headers, subtests indented by 4 spaces before
// the line of the test that holds them, YAML diagnostics between "---" and "..."
// (a failure's first lines become its Message) and plans "1..N": planned tests that
// never reported, subtests announced that never reported and "Bail out!" count as
// failed.
func parseTAP(lim *limitReader, c *collector) error {
	s := &tapState{}
	lr := newLineReader(lim)
	for {
		raw, ok := lr.next()
		if !ok {
			break
		}
		if !s.line(string(raw)) {
			break
		}
	}
	s.closeTo(0, "", false)
	s.abandon(0)
	if len(s.levels) > 0 {
		s.levels[0].finish()
		for _, r := range s.levels[0].results {
			msg := ""
			if r.status != StatusPass {
				msg = r.msg.String()
			}
			c.add(r.name, r.status, msg)
		}
	}
	return nil
}

// line reads one line; false after "Bail out!".
func (s *tapState) line(line string) bool {
	indent := 0
	for indent < len(line) && line[indent] == ' ' {
		indent++
	}
	content := strings.TrimRight(line[indent:], " \t\r")
	if s.yaml != nil {
		if content == "" {
			return true
		}
		if indent >= s.yamlIndent {
			if content == "..." && indent == s.yamlIndent {
				s.yaml = nil
			} else if s.yaml.status == StatusFail && !strings.HasPrefix(content, "duration_ms:") {
				s.yaml.msg.addLine(strings.TrimRight(line[s.yamlIndent:], " \t\r"))
			}
			return true
		}
		s.yaml = nil
	}
	last := s.last
	s.last = nil
	depth := min(indent/4, maxTAPDepth)
	switch {
	case content == "":
	case content == "---" && last != nil && indent > s.lastIndent:
		s.yaml, s.yamlIndent = last, indent
	case strings.HasPrefix(content, "Bail out!"):
		s.ensure(depth)
		r := &tapResult{name: "Bail out!", status: StatusFail}
		r.msg.addLine(content)
		s.levels[depth].results = append(s.levels[depth].results, r)
		return false
	case strings.HasPrefix(content, "1.."):
		s.ensure(depth)
		digits := content[3:]
		if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			digits = digits[:i]
		}
		if n, err := strconv.Atoi(digits); err == nil && len(digits) < 10 {
			s.levels[depth].plan = n
		}
	case content == "# Subtest" || strings.HasPrefix(content, "# Subtest:"):
		s.ensure(depth)
		s.closeTo(depth, "", false)
		s.abandon(depth)
		lv := s.levels[depth]
		lv.header, lv.open = unescapeTAP(strings.TrimSpace(strings.TrimPrefix(content, "# Subtest:"))), true
		if content == "# Subtest" {
			lv.header = ""
		}
	default:
		desc, st, ok := tapLine(content)
		if !ok {
			return true // a comment, "TAP version 13", or output that is not TAP
		}
		s.ensure(depth)
		s.closeTo(depth, desc.name, true)
		lv := s.levels[depth]
		lv.count++
		lv.header, lv.open = "", false
		r := &tapResult{name: desc.name, status: st}
		if desc.directive != "" {
			r.msg.addLine(desc.directive)
		}
		lv.results = append(lv.results, r)
		s.last, s.lastIndent = r, indent
	}
	return true
}

func (s *tapState) ensure(depth int) {
	for len(s.levels) <= depth {
		s.levels = append(s.levels, &tapLevel{plan: -1})
	}
}

// closeTo ends the levels deeper than depth: their results move up, named under
// their parent's description (name, when the parent's own line was just read) or
// under the subtest header announced for them; a parent announced that did not
// report counts as failed.
func (s *tapState) closeTo(depth int, name string, reported bool) {
	for k := len(s.levels) - 1; k > depth; k-- {
		lv, parent := s.levels[k], s.levels[k-1]
		s.abandon(k)
		lv.finish()
		prefix := parent.header
		if k == depth+1 && reported {
			prefix = name
		}
		prefix = boundName(prefix)
		for _, r := range lv.results {
			if prefix != "" {
				r.name = boundName(prefix + " > " + r.name)
			}
			parent.results = append(parent.results, r)
		}
		if k != depth+1 || !reported {
			s.abandon(k - 1)
		}
	}
	if len(s.levels) > depth+1 {
		s.levels = s.levels[:depth+1]
	}
}

// abandon fails the subtest announced at level k that never reported.
func (s *tapState) abandon(k int) {
	if k >= len(s.levels) || !s.levels[k].open {
		return
	}
	lv := s.levels[k]
	lv.open = false
	r := &tapResult{name: lv.header, status: StatusFail}
	r.msg.addLine("did not report a result: the output ended or moved on")
	lv.results = append(lv.results, r)
}

// finish adds a failed result for the tests that the level's plan announced and
// that never reported.
func (lv *tapLevel) finish() {
	if lv.plan > lv.count {
		r := &tapResult{name: "(planned tests not reported)", status: StatusFail}
		r.msg.addLine("the plan announced " + strconv.Itoa(lv.plan) + " tests, " + strconv.Itoa(lv.count) + " reported")
		lv.results = append(lv.results, r)
		lv.plan = -1
	}
}

type tapDesc struct{ name, directive string }

// tapLine parses "ok 1 - desc # SKIP why" and "not ok 2 desc".
func tapLine(content string) (tapDesc, Status, bool) {
	var st Status
	var rest string
	switch {
	case content == "ok" || strings.HasPrefix(content, "ok "):
		st, rest = StatusPass, content[2:]
	case content == "not ok" || strings.HasPrefix(content, "not ok "):
		st, rest = StatusFail, content[6:]
	default:
		return tapDesc{}, "", false
	}
	rest = strings.TrimLeft(rest, " ")
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	number := rest[:i]
	rest = strings.TrimLeft(rest[i:], " ")
	if rest == "-" || strings.HasPrefix(rest, "- ") {
		rest = rest[1:]
	}
	desc, directive := splitDirective(rest)
	d := tapDesc{name: unescapeTAP(strings.TrimSpace(desc)), directive: strings.TrimSpace(directive)}
	if d.name == "" {
		d.name = "#" + number
	}
	upper := strings.ToUpper(d.directive)
	if strings.HasPrefix(upper, "SKIP") || strings.HasPrefix(upper, "TODO") {
		st = StatusSkip
	}
	return d, st, true
}

// splitDirective cuts s at its first '#' that is not escaped with a backslash.
func splitDirective(s string) (desc, directive string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '#':
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// unescapeTAP undoes TAP's "\#" and "\\".
func unescapeTAP(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '#' || s[i+1] == '\\') {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
