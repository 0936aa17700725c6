package components

import (
	"bytes"
	"encoding/json"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Bounds of an output as a page shows it: the first screen is at most
// OutputPreviewLines lines and OutputPreviewBytes bytes; "show all" holds at most
// OutputPageBytes bytes on the task page and OutputInboxBytes in the inbox, which
// shows many outputs at once and is rendered again on every live event; the
// download link has the rest.
const (
	OutputPreviewLines = 30
	OutputPreviewBytes = 4 << 10
	OutputPageBytes    = 256 << 10
	OutputInboxBytes   = 16 << 10
)

// Output kinds: how an output's bytes are shown.
const (
	OutputMarkdown = "markdown" // rendered, raw HTML and dangerous links removed
	OutputJSON     = "json"     // pretty-printed
	OutputText     = "text"     // as it is
	OutputBinary   = "binary"   // not text: the download link only
)

// OutputView is a task's output file as the inbox and the task page show it: its
// name in the workspace (never where the server keeps it), its first screen, all of
// it up to OutputPageBytes, and the dashboard's download link.
type OutputView struct {
	TaskID int64
	Name   string // the path relative to the task's workspace, slash-separated
	Size   int64
	Kind   string // OutputMarkdown, OutputJSON, OutputText or OutputBinary
	// Preview is the first screen and Rest what follows it (up to OutputPageBytes),
	// as HTML: Markdown rendered safely, anything else escaped in a <pre>. "Show
	// all" opens Rest under Preview, so that the page then holds all of it once.
	Preview templ.Component
	Rest    templ.Component
	// More says the first screen is not all of it: "show all" is offered; RestLines
	// is how many lines it adds.
	More      bool
	RestLines int
	// Cut says even "show all" is not all of it (over Limit bytes): the download has
	// the rest.
	Cut bool
	// Limit is how many bytes of the output the page holds at most.
	Limit int
	// Changed says the file shown is the workspace's and changed since it was
	// verified.
	Changed bool
	// Unavailable says why the output cannot be shown ("" when it can); the page says
	// it instead of the output.
	Unavailable string
}

// Href is the dashboard's download of the output (an attachment).
func (v OutputView) Href() string {
	return "/tasks/" + strconv.FormatInt(v.TaskID, 10) + "/output"
}

// NewOutputView builds the view of output name of task taskID from its first bytes
// data (read up to OutputPageBytes+1, so that a longer file is known to be cut) and
// its size.
func NewOutputView(taskID int64, name string, size int64, data []byte) OutputView {
	return NewOutputViewUpTo(taskID, name, size, data, OutputPageBytes)
}

// NewOutputViewUpTo is NewOutputView showing at most limit bytes (data read up to
// limit+1): the inbox's view is OutputInboxBytes.
func NewOutputViewUpTo(taskID int64, name string, size int64, data []byte, limit int) OutputView {
	v := OutputView{TaskID: taskID, Name: name, Size: size, Limit: limit}
	if len(data) > limit {
		data, v.Cut = data[:limit], true
	}
	if int64(len(data)) < size {
		v.Cut = true
	}
	if v.Cut {
		// A multi-byte character cut in two is not a reason to call the file binary.
		for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	v.Kind = outputKind(name, data)
	switch v.Kind {
	case OutputBinary:
		return v
	case OutputJSON:
		var buf bytes.Buffer
		if !v.Cut && json.Indent(&buf, bytes.TrimSpace(data), "", "  ") == nil {
			data = buf.Bytes()
		}
	}
	head, more := firstScreen(data, v.Kind == OutputMarkdown)
	rest := data[len(head):]
	v.More, v.RestLines = more || v.Cut, bytes.Count(rest, []byte("\n"))
	if len(rest) > 0 && rest[len(rest)-1] != '\n' {
		v.RestLines++
	}
	if v.Kind == OutputMarkdown {
		v.Preview, v.Rest = templ.Raw(Markdown(head)), templ.Raw(Markdown(rest))
	} else {
		v.Preview, v.Rest = outputPre(string(head)), outputPre(string(rest))
	}
	return v
}

// outputKind tells how to show data, the output named name: by its extension, and
// as binary when it is not UTF-8 text.
func outputKind(name string, data []byte) string {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return OutputBinary
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".mdown":
		return OutputMarkdown
	case ".json":
		return OutputJSON
	}
	return OutputText
}

// firstScreen is the start of data a page shows before "show all": at most
// OutputPreviewLines lines and OutputPreviewBytes bytes, cut at a line end where there
// is one and, in Markdown, not inside a fenced code block (the rest is rendered on
// its own); more says data goes on.
func firstScreen(data []byte, markdown bool) (head []byte, more bool) {
	end, lines := 0, 0
	for end < len(data) && lines < OutputPreviewLines {
		i := bytes.IndexByte(data[end:], '\n')
		if i < 0 {
			end = len(data)
			break
		}
		end += i + 1
		lines++
	}
	if end > OutputPreviewBytes {
		end = OutputPreviewBytes
		if i := bytes.LastIndexByte(data[:end], '\n'); i > 0 {
			end = i + 1
		}
		for end > 0 && !utf8.Valid(data[:end]) {
			end--
		}
	}
	if markdown {
		if open := openFence(data[:end]); open >= 0 {
			end = open // the code block goes to "show all" whole
		}
	}
	return data[:end], len(bytes.TrimSpace(data[end:])) > 0
}

// openFence is the offset of the line opening a fenced code block (``` or ~~~) that
// md leaves open, or -1 when every fence in md is closed.
func openFence(md []byte) int {
	open, marker := -1, ""
	for off := 0; off < len(md); {
		line := md[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		t := strings.TrimLeft(string(line), " ")
		if len(string(line))-len(t) <= 3 {
			switch {
			case marker == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
				open, marker = off, t[:3]
			case marker != "" && strings.HasPrefix(t, marker):
				open, marker = -1, ""
			}
		}
		off += len(line)
	}
	return open
}

// markdown renders CommonMark with GitHub's tables, strikethrough and task lists. It
// is goldmark without html.WithUnsafe: raw HTML is replaced by a comment and links and
// images to javascript:, vbscript:, file: and non-image data: URLs lose their target,
// so a worker's output cannot run script in the dashboard.
var markdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))

// Markdown renders src as HTML safe to put in a page: the one place the dashboard
// writes HTML it did not escape itself, and it is goldmark's safe mode (markdown).
// An error renders the source escaped instead.
func Markdown(src []byte) string {
	var buf bytes.Buffer
	if err := markdown.Convert(src, &buf); err != nil {
		return "<pre>" + templ.EscapeString(string(src)) + "</pre>"
	}
	return buf.String()
}
