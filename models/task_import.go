package models

import (
	"bytes"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/models/contract"
)

// taskFrontMatter is the YAML front matter of a task file.
type taskFrontMatter struct {
	ID           yaml.Node             `yaml:"id"`
	Title        string                `yaml:"title"`
	Role         string                `yaml:"role"`
	Priority     yaml.Node             `yaml:"priority"`
	DependsOn    yaml.Node             `yaml:"depends_on"`
	Approve      string                `yaml:"approve"`
	Verify       string                `yaml:"verify"`
	Status       string                `yaml:"status"`
	Estimate     string                `yaml:"estimate"`
	Workstream   string                `yaml:"workstream"`
	Phase        string                `yaml:"phase"`
	Completion   contract.Completion   `yaml:"completion"`
	Verification contract.Verification `yaml:"verification"`
	Review       *contract.Review      `yaml:"review"`
}

// Priority words a task file may use instead of a number; a larger number is more
// urgent.
var priorityWords = map[string]int{
	"low": 1, "normal": 2, "medium": 2, "high": 3, "urgent": 4, "critical": 4,
}

// doneStatuses are statuses by which a task file claims the work is finished.
var doneStatuses = map[string]bool{
	"done": true, "complete": true, "completed": true, "verified": true, "closed": true, "finished": true,
}

// ParseTaskMarkdown reads a task file: YAML front matter between two `---` lines, then
// a Markdown body that becomes the brief. The front matter may hold title, role,
// priority (a number, or low/normal/medium/high/urgent/critical = 1/2/2/3/4/4),
// depends_on (task ids), approve, verify, completion, verification and review, plus
// the seed's own keys id, status, estimate, workstream and phase. Any other key is an
// EINVALID error naming it; unreadable input is EBADREQUEST with a line.
//
// Decisions, since Task has no field for them:
//   - An external id (id: TEST-001), estimate, workstream, phase and depends_on
//     entries that are not numeric task ids are kept as a "Reference:" line at the
//     top of the brief, so the worker and the dashboard still see them; numeric
//     depends_on entries become DependsOn.
//   - status is never taken over: an imported task starts pending, because nothing is
//     done until the runner or a person has checked it. A status that claims the work
//     is finished (done, completed, verified, …) is noted in the Reference line.
//   - Without a title in the front matter, the first "# " heading of the body is the
//     title.
//
// ParseTaskMarkdown does not validate the task or resolve its contract; the caller
// does both (the service's task creation does).
func ParseTaskMarkdown(data []byte) (*Task, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	front, body, err := splitFrontMatter(text)
	if err != nil {
		return nil, err
	}
	var fm taskFrontMatter
	if strings.TrimSpace(front) != "" {
		if err := contract.DecodeStrictYAML([]byte(front), taskFrontMatterSchema, &fm); err != nil {
			return nil, contract.BadRequest("task front matter", err, []byte(front))
		}
	}
	t := &Task{
		Title: strings.TrimSpace(fm.Title), Role: fm.Role, Approve: fm.Approve, Verify: fm.Verify,
		State:    TaskPending,
		Contract: contract.Contract{Completion: fm.Completion, Verification: fm.Verification, Review: fm.Review},
	}
	var fe FieldErrors
	if fm.Priority.Kind != 0 {
		p, ok := parsePriority(&fm.Priority)
		if !ok {
			fe.Add("priority", "must be a number or one of low, normal, medium, high, urgent, critical")
		}
		t.Priority = p
	}
	var refs []string
	if id := scalarValue(&fm.ID); id != "" {
		refs = append(refs, id)
	}
	var extDeps []string
	for _, d := range listValues(&fm.DependsOn) {
		if n, err := strconv.ParseInt(d, 10, 64); err == nil && n > 0 {
			t.DependsOn = append(t.DependsOn, n)
		} else if d != "" {
			extDeps = append(extDeps, d)
		}
	}
	for _, kv := range [][2]string{{"estimate", fm.Estimate}, {"workstream", fm.Workstream}, {"phase", fm.Phase}} {
		if v := strings.TrimSpace(kv[1]); v != "" {
			refs = append(refs, kv[0]+" "+v)
		}
	}
	if len(extDeps) > 0 {
		refs = append(refs, "depends on "+strings.Join(extDeps, ", "))
	}
	if st := strings.ToLower(strings.TrimSpace(fm.Status)); doneStatuses[st] {
		refs = append(refs, "imported with status "+quote(st)+"; here it starts pending and must be verified")
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	body = strings.Trim(body, "\n")
	if t.Title == "" {
		t.Title = firstHeading(body)
	}
	if len(refs) > 0 {
		body = "Reference: " + strings.Join(refs, "; ") + "\n\n" + body
	}
	t.Brief = strings.TrimRight(body, "\n \t")
	return t, nil
}

// splitFrontMatter returns the YAML between the opening and closing `---` lines and
// the body after it. The opening line must be the first line; the closing line may
// also be `...` (the YAML end-of-document marker).
func splitFrontMatter(text string) (front, body string, err error) {
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		return "", "", &Error{Code: EBADREQUEST, Message: "task file: must start with a '---' line opening the YAML front matter"}
	}
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			// A leading newline keeps the parser's line numbers equal to the file's.
			return "\n" + strings.Join(lines[1:i], "\n") + "\n", strings.Join(lines[i+1:], "\n"), nil
		}
	}
	return "", "", &Error{Code: EBADREQUEST, Message: "task file: the front matter has no closing '---' line"}
}

func parsePriority(n *yaml.Node) (int, bool) {
	v := strings.ToLower(scalarValue(n))
	if v == "" {
		return 0, true
	}
	if p, err := strconv.Atoi(v); err == nil {
		return p, true
	}
	p, ok := priorityWords[v]
	return p, ok
}

func scalarValue(n *yaml.Node) string {
	n = contract.YAMLResolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return strings.TrimSpace(n.Value)
}

// listValues reads a scalar or a sequence of scalars.
func listValues(n *yaml.Node) []string {
	n = contract.YAMLResolve(n)
	if n == nil {
		return nil
	}
	if n.Kind == yaml.SequenceNode {
		out := make([]string, 0, len(n.Content))
		for _, e := range n.Content {
			if v := scalarValue(e); v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	if v := scalarValue(n); v != "" {
		// "depends_on: 3, 4" written as one scalar.
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}

func firstHeading(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(h)
		}
	}
	return ""
}
