package models

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models/contract"
)

func TestTaskMarkdownSeedSignal(t *testing.T) {
	task, err := ParseTaskMarkdown(readTestdata(t, "seed_task_signal.md"))
	if err != nil {
		t.Fatal(err)
	}
	c := task.Contract.Completion
	if task.Title != "Say the word" || task.Role != "backend" || c.DoneToken != "FINISHED_HERE" || c.Type != contract.CompletionNone || c.Signal != "" {
		t.Errorf("%+v", task)
	}
	if !strings.HasPrefix(task.Brief, "Reference: DEMO-007\n\nTidy the scratch") {
		t.Errorf("brief %q", task.Brief)
	}
	if task.State != TaskPending {
		t.Errorf("state %s", task.State)
	}
	task.Contract.Normalize()
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTaskMarkdownSeedVerify(t *testing.T) {
	task, err := ParseTaskMarkdown(readTestdata(t, "seed_task_verify.md"))
	if err != nil {
		t.Fatal(err)
	}
	c := task.Contract.Completion
	if len(c.Verify) != 1 || c.Verify[0] != "test -f marker.txt" || c.MaxAttempts != 4 {
		t.Errorf("%+v", c)
	}
	task.Contract.Normalize()
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTaskMarkdownSeedHeader(t *testing.T) {
	task, err := ParseTaskMarkdown(readTestdata(t, "seed_task_header.md"))
	if err != nil {
		t.Fatal(err)
	}
	if task.Priority != 3 || len(task.DependsOn) != 1 || task.DependsOn[0] != 12 {
		t.Errorf("priority %d depends %v", task.Priority, task.DependsOn)
	}
	want := "Reference: DEMO-040; estimate M; workstream B; phase 2; depends on DEMO-039\n\n# Nightly export"
	if !strings.HasPrefix(task.Brief, want) {
		t.Errorf("brief %q", task.Brief)
	}
	if task.Title != "Nightly export of verified tasks" || task.State != TaskPending {
		t.Errorf("%+v", task)
	}
}

func TestTaskMarkdownFull(t *testing.T) {
	in := "---\r\ntitle: \"  Build it \"\r\nrole: Developer\r\npriority: 7\r\ndepends_on: 3, 4\r\napprove: lead\r\nverify: any\r\nstatus: done\r\n" +
		"completion:\r\n  type: file\r\n  path: out/{task_id}.md\r\n  timeout: 1h\r\nverification:\r\n  type: verifiable\r\n  criteria:\r\n    - {activity: unit-test, description: tests pass}\r\n" +
		"review: {role: reviewer}\r\n...\r\nBody line\r\n"
	task, err := ParseTaskMarkdown([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Build it" || task.Priority != 7 || len(task.DependsOn) != 2 || task.Approve != "lead" || task.Verify != "any" ||
		task.Contract.Completion.Timeout.Duration != time.Hour || task.Contract.Review == nil || len(task.Contract.Verification.Criteria) != 1 {
		t.Errorf("%+v", task)
	}
	if !strings.Contains(task.Brief, `imported with status "done"`) || !strings.HasSuffix(task.Brief, "Body line") || task.State != TaskPending {
		t.Errorf("brief %q state %s", task.Brief, task.State)
	}
}

func TestTaskMarkdownTitleFromHeading(t *testing.T) {
	task, err := ParseTaskMarkdown([]byte("---\n---\n\nIntro\n\n#   Heading title  \n\nmore"))
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Heading title" || task.Brief != "Intro\n\n#   Heading title  \n\nmore" {
		t.Errorf("%q %q", task.Title, task.Brief)
	}
	task, err = ParseTaskMarkdown([]byte("---\npriority: ~\nid: ~\n---\nno heading"))
	if err != nil || task.Title != "" || task.Priority != 0 {
		t.Errorf("%v %+v", err, task)
	}
}

func TestTaskMarkdownErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, code, field, contains string
	}{
		{"no front matter", "# Title\nbody", EBADREQUEST, "", "---"},
		{"unclosed", "---\ntitle: x\nbody", EBADREQUEST, "", "closing"},
		{"yaml syntax", "---\ntitle: [x\n---\nbody", EBADREQUEST, "", "line"},
		{"not a mapping", "---\n- a\n---\n", EBADREQUEST, "", "mapping"},
		{"wrong type on line 3", "---\ntitle: x\nrole: {a: b}\n---\n", EBADREQUEST, "", "line 3"},
		{"unknown field", "---\ntitle: x\nowner: me\n---\n", EINVALID, "owner", ""},
		{"unknown completion field", "---\ntitle: x\ncompletion: {sigal: X}\n---\n", EINVALID, "completion.sigal", ""},
		{"bad priority", "---\ntitle: x\npriority: whenever\n---\n", EINVALID, "priority", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTaskMarkdown([]byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not a *Error: %v", err)
			}
			if e.Code != tc.code {
				t.Fatalf("code %s want %s: %v", e.Code, tc.code, err)
			}
			if tc.field != "" && e.Fields[tc.field] == "" {
				t.Fatalf("fields %v", e.Fields)
			}
			if !strings.Contains(e.Message, tc.contains) {
				t.Fatalf("message %q lacks %q", e.Message, tc.contains)
			}
		})
	}
}

func TestTaskMarkdownPriorityWords(t *testing.T) {
	for word, want := range map[string]int{"low": 1, "Medium": 2, "normal": 2, "HIGH": 3, "urgent": 4, "critical": 4, "0": 0, "-2": -2} {
		task, err := ParseTaskMarkdown([]byte("---\ntitle: x\npriority: " + word + "\n---\n"))
		if err != nil || task.Priority != want {
			t.Errorf("%s: %v %v", word, task, err)
		}
	}
}
