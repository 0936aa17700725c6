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
// OutputPageBytes bytes, and the download link has the rest.
const (
	OutputPreviewLines = 40
	OutputPreviewBytes = 4 << 10
	OutputPageBytes    = 256 << 10
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
	// Preview and Full are the first screen and the whole (up to OutputPageBytes) as
	// HTML: Markdown rendered safely, anything else escaped in a <pre>.
	Preview templ.Component
	Full    templ.Component
	// More says the first screen is not all of it: "show all" is offered.
	More bool
	// Cut says even "show all" is not all of it (over OutputPageBytes): the download
	// has the rest.
	Cut bool
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
	v := OutputView{TaskID: taskID, Name: name, Size: size}
	if len(data) > OutputPageBytes {
		data, v.Cut = data[:OutputPageBytes], true
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
	head, more := firstScreen(data)
	v.More = more || v.Cut
	if v.Kind == OutputMarkdown {
		v.Preview, v.Full = templ.Raw(Markdown(head)), templ.Raw(Markdown(data))
	} else {
		v.Preview, v.Full = outputPre(string(head)), outputPre(string(data))
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
// is one; more says data goes on.
func firstScreen(data []byte) (head []byte, more bool) {
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
	return data[:end], len(bytes.TrimSpace(data[end:])) > 0
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
