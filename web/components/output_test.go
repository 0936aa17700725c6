package components

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// hostileMarkdown is an output a worker could write to attack whoever looks at it.
const hostileMarkdown = "# Findings\n\n" +
	"<script>alert('block')</script>\n\n" +
	"Inline <script>alert('inline')</script> and <img src=x onerror=\"alert('img')\"> here.\n\n" +
	"<div onclick=\"alert('div')\">raw block</div>\n\n" +
	"[click me](javascript:alert('link')) and [vb](vbscript:msgbox) and ![pic](javascript:alert('pic'))\n\n" +
	"[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n\n" +
	"<javascript:alert('autolink')>\n\n" +
	"[fine](https://example.com/report) and **bold**\n"

func TestMarkdownNeutralizesScriptLinksAndRawHTML(t *testing.T) {
	got := Markdown([]byte(hostileMarkdown))
	for _, bad := range []string{"<script", "onerror", "onclick", "<img src=\"x\"", "<div", `href="javascript`, `src="javascript`, `href="vbscript`, `href="data:`} {
		if strings.Contains(strings.ToLower(got), bad) {
			t.Errorf("rendered Markdown holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"<h1>Findings</h1>", `<a href="https://example.com/report">fine</a>`, "<strong>bold</strong>", `<a href="">click me</a>`, "raw HTML omitted"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered Markdown lacks %q:\n%s", want, got)
		}
	}
}

func renderOutput(t *testing.T, v OutputView) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Output(v, "out").Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestOutputViewKinds(t *testing.T) {
	t.Run("json is pretty-printed", func(t *testing.T) {
		data := []byte(`{"b":[1,2],"a":"<x>"}`)
		v := NewOutputView(3, "out/result.json", int64(len(data)), data)
		html := renderOutput(t, v)
		if v.Kind != OutputJSON || v.More {
			t.Fatalf("kind %q more %v", v.Kind, v.More)
		}
		if !strings.Contains(html, "{\n  &#34;b&#34;: [\n    1,") || strings.Contains(html, "<x>") {
			t.Errorf("JSON not pretty-printed and escaped:\n%s", html)
		}
		if !strings.Contains(html, `href="/tasks/3/output"`) {
			t.Errorf("no download link:\n%s", html)
		}
	})
	t.Run("long text has a first screen and show all", func(t *testing.T) {
		var b strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&b, "line %03d\n", i)
		}
		b.WriteString("the last line\n")
		data := []byte(b.String())
		v := NewOutputView(1, "log.txt", int64(len(data)), data)
		html := renderOutput(t, v)
		if v.Kind != OutputText || !v.More || v.Cut || v.RestLines != 101-OutputPreviewLines {
			t.Fatalf("kind %q more %v cut %v rest %d lines", v.Kind, v.More, v.Cut, v.RestLines)
		}
		at := strings.Index(html, "<details")
		preview, all := html[:at], html[at:]
		if strings.Contains(preview, "the last line") || strings.Count(preview, "line ") != OutputPreviewLines {
			t.Errorf("the first screen is not the first %d lines:\n%s", OutputPreviewLines, preview)
		}
		// Show all adds what follows, once: the page then holds every line once.
		if !strings.Contains(all, "Show all (71 more lines)") || !strings.Contains(all, "the last line") ||
			strings.Contains(all, fmt.Sprintf("line %03d\n", OutputPreviewLines)) || !strings.Contains(all, fmt.Sprintf("line %03d\n", OutputPreviewLines+1)) {
			t.Errorf("show all is not the rest:\n%s", all)
		}
	})
	t.Run("markdown keeps a code block whole", func(t *testing.T) {
		md := strings.Repeat("text\n\n", 12) + "```go\n" + strings.Repeat("x := 1\n", 20) + "```\n\nafter\n"
		v := NewOutputView(1, "a.md", int64(len(md)), []byte(md))
		html := renderOutput(t, v)
		preview, all := html[:strings.Index(html, "<details")], html[strings.Index(html, "<details"):]
		if strings.Contains(preview, "<pre>") || strings.Count(all, "x := 1") != 20 {
			t.Errorf("the code block was cut:\n%s", html)
		}
	})
	t.Run("larger than a page is cut, the download has it", func(t *testing.T) {
		data := bytes.Repeat([]byte("é"), OutputPageBytes) // two bytes each: cut mid-file
		v := NewOutputView(1, "big.txt", int64(len(data)), data[:OutputPageBytes+1])
		if v.Kind != OutputText || !v.Cut || !v.More {
			t.Fatalf("kind %q cut %v more %v", v.Kind, v.Cut, v.More)
		}
		if !strings.Contains(renderOutput(t, v), "the download has all of it") {
			t.Error("no note that the page shows part of it")
		}
	})
	t.Run("a file changed since verification says so", func(t *testing.T) {
		v := NewOutputView(1, "a.txt", 2, []byte("hi"))
		if strings.Contains(renderOutput(t, v), "Changed since it was verified") {
			t.Error("an unchanged file is marked changed")
		}
		v.Changed = true
		if !strings.Contains(renderOutput(t, v), "Changed since it was verified") {
			t.Error("a changed file is not marked")
		}
	})
	t.Run("binary is download only", func(t *testing.T) {
		v := NewOutputView(1, "a.md", 4, []byte{0xff, 0, 1, 2})
		html := renderOutput(t, v)
		if v.Kind != OutputBinary || strings.Contains(html, "output-body") || !strings.Contains(html, "Download") {
			t.Errorf("kind %q:\n%s", v.Kind, html)
		}
	})
}
