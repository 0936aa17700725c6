package components

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return buf.String()
}

func TestStateBadgeEscapesAndSanitises(t *testing.T) {
	got := render(t, StateBadge(`<script>alert(1)</script>`))
	if strings.Contains(got, "<script>") {
		t.Fatalf("unescaped script in badge: %s", got)
	}
	if !strings.Contains(got, "&lt;script&gt;") {
		t.Errorf("badge text not escaped: %s", got)
	}
	if !strings.Contains(got, "state-unknown") {
		t.Errorf("hostile state should get the neutral class: %s", got)
	}

	got = render(t, StateBadge("pending_verify"))
	if !strings.Contains(got, "state-pending_verify") || !strings.Contains(got, "pending verify") {
		t.Errorf("badge: %s", got)
	}
}

func TestTextIsEscapedEverywhere(t *testing.T) {
	evil := `<script>alert("x")</script>`
	for name, c := range map[string]templ.Component{
		"header":   PageHeader(evil, evil),
		"empty":    EmptyState(evil),
		"pre":      Pre(evil),
		"flash":    Flash(FlashError, evil),
		"timeline": Timeline([]TimelineItem{{Title: evil, Body: evil, Actor: evil, State: evil, At: time.Now()}}),
		"deflist":  DefList([]DefItem{{Term: evil, Value: evil}, {Term: "v", Values: []string{evil}, Mono: true}}),
		"stat":     StatTile(evil, 3, evil, "javascript:alert(1)"),
		"button":   PostButton("/x", evil, evil, "danger", evil),
	} {
		got := render(t, c)
		if strings.Contains(got, "<script>") {
			t.Errorf("%s: unescaped script: %s", name, got)
		}
		if strings.Contains(got, "javascript:") {
			t.Errorf("%s: javascript URL survived: %s", name, got)
		}
	}
}

func TestFieldError(t *testing.T) {
	got := render(t, Field(FieldProps{Name: "title", Label: "Title", Value: `"><b>`, Error: "Title is required", Help: "Short", Required: true}))
	for _, want := range []string{
		`aria-invalid="true"`,
		`id="f-title-error"`,
		`aria-describedby="f-title-error f-title-help"`,
		`class="field-error"`,
		"Title is required",
		`data-testid="title"`,
		`data-testid="title-error"`,
		`for="f-title"`,
		"required",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("field misses %q: %s", want, got)
		}
	}
	if strings.Contains(got, `"><b>`) {
		t.Errorf("value not escaped: %s", got)
	}

	ok := render(t, Field(FieldProps{Name: "title", Label: "Title"}))
	if strings.Contains(ok, "aria-invalid") || strings.Contains(ok, "field-error") {
		t.Errorf("field without error renders error markup: %s", ok)
	}
	for _, c := range []templ.Component{
		TextArea(FieldProps{Name: "brief", Label: "Brief", Error: "too short"}),
		Select(FieldProps{Name: "role", Label: "Role", Value: "b", Error: "pick one"}, []Option{{"a", "A"}, {"b", "B"}}),
	} {
		got := render(t, c)
		if !strings.Contains(got, `aria-invalid="true"`) || !strings.Contains(got, "field-error") {
			t.Errorf("error not rendered: %s", got)
		}
	}
}

func TestPostButtonCarriesCSRF(t *testing.T) {
	got := render(t, PostButton("/tasks/4/cancel", "Cancel", "tok123", "danger small", "task-cancel"))
	for _, want := range []string{
		`method="post"`,
		`action="/tasks/4/cancel"`,
		`<input type="hidden" name="csrf" value="tok123">`,
		`data-testid="task-cancel"`,
		`class="btn btn-danger btn-small"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("post button misses %q: %s", want, got)
		}
	}
}

func TestProgressAndPagination(t *testing.T) {
	// The fill's width is an SVG attribute: the CSP forbids inline styles.
	got := render(t, Progress(3, 4))
	if !strings.Contains(got, `width="75%"`) || !strings.Contains(got, `aria-valuenow="3"`) || strings.Contains(got, "style=") {
		t.Errorf("progress: %s", got)
	}
	if got := render(t, Progress(0, 0)); !strings.Contains(got, `width="0%"`) || !strings.Contains(got, "no tasks yet") {
		t.Errorf("empty progress: %s", got)
	}
	for n, want := range map[int]string{0: "0 tasks", 1: "1 task", 2: "2 tasks"} {
		if got := Plural(n, "task", "tasks"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
	if got := render(t, TaskState("verified", true)); !strings.Contains(got, "verified (override)") || !strings.Contains(got, `data-override="true"`) {
		t.Errorf("overridden state: %s", got)
	}
	if got := render(t, TaskState("verified", false)); strings.Contains(got, "override") {
		t.Errorf("plain verified state: %s", got)
	}

	got = render(t, Pagination(PaginationProps{URL: "/tasks?state=blocked&page=2", Page: 2, PerPage: 10, Total: 25}))
	for _, want := range []string{"Page 2 of 3", `href="/tasks?state=blocked"`, `href="/tasks?page=3&amp;state=blocked"`} {
		if !strings.Contains(got, want) {
			t.Errorf("pagination misses %q: %s", want, got)
		}
	}
}

func TestSafeHref(t *testing.T) {
	for in, want := range map[string]string{
		"/tasks/1":           "/tasks/1",
		"?page=2":            "?page=2",
		"javascript:alert()": "#",
		"//evil.example":     "#",
		"https://x.example":  "#",
		"":                   "#",
	} {
		if got := safeHref(in); got != want {
			t.Errorf("safeHref(%q) = %q, want %q", in, got, want)
		}
	}
}
