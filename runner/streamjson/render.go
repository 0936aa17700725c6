package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// toolLine renders a tool call as "→ Name: summary of its input".
func toolLine(name string, input json.RawMessage) string {
	name = oneLine(truncate(name, 64))
	if name == "" {
		name = "?"
	}
	s := inputSummary(name, input)
	if s == "" {
		return "→ " + name
	}
	return "→ " + name + ": " + s
}

// inputSummary picks the input field that says what a known tool does (the
// command, the file, the pattern), or else the compact JSON of the input.
func inputSummary(name string, input json.RawMessage) string {
	var in object
	_ = json.Unmarshal(input, &in)
	var keys []string
	switch name {
	case "Bash":
		keys = []string{"command"}
	case "Read", "Write", "Edit", "MultiEdit":
		keys = []string{"file_path"}
	case "NotebookEdit", "NotebookRead":
		keys = []string{"notebook_path"}
	case "Glob", "Grep":
		keys = []string{"pattern"}
	case "WebFetch":
		keys = []string{"url"}
	case "WebSearch":
		keys = []string{"query"}
	case "Task", "Agent":
		keys = []string{"description"}
	case "TodoWrite":
		if todos := getArray(in, "todos"); todos != nil {
			return fmt.Sprintf("%d items", len(todos))
		}
	}
	for _, k := range keys {
		if s, _ := getString(in, k); strings.TrimSpace(s) != "" {
			return oneLine(truncate(s, summaryMax))
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, input) != nil {
		buf.Reset()
		buf.Write(bytes.TrimSpace(input))
	}
	s := buf.String()
	if s == "{}" || s == "null" {
		return ""
	}
	return oneLine(truncate(s, summaryMax))
}

// resultSummary is the first non-blank line of a tool result, whose content
// is a string or a list of blocks (text, image, …).
func resultSummary(content json.RawMessage) string {
	var text string
	if s, ok := asString(content); ok {
		text = s
	} else {
		var blocks []json.RawMessage
		_ = json.Unmarshal(content, &blocks)
		var parts []string
		for _, raw := range blocks {
			var b object
			if json.Unmarshal(raw, &b) != nil {
				continue
			}
			switch t, _ := getString(b, "type"); t {
			case "text":
				s, _ := getString(b, "text")
				parts = append(parts, s)
			case "":
			default:
				parts = append(parts, "["+t+"]")
			}
		}
		text = strings.Join(parts, "\n")
	}
	for l := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(l) != "" {
			return oneLine(truncate(strings.TrimRight(l, "\r"), summaryMax))
		}
	}
	return "(no output)"
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// oneLine keeps the first line of s, marking what was left off, and replaces
// other control characters with spaces: a summary must stay one log line and
// carry no terminal escapes.
func oneLine(s string) string {
	more := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		more = strings.TrimSpace(s[i+1:]) != ""
		s = s[:i]
	}
	s = strings.Map(func(r rune) rune {
		if r != '\t' && (r < 0x20 || r == 0x7f) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimRight(s, " ")
	if more {
		s += " …"
	}
	return s
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return oneLine(truncate(s, summaryMax))
}
