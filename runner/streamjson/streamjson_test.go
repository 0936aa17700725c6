package streamjson

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// The transcripts below follow the documented stream-json shapes (Claude
// Agent SDK message types; the cost-tracking guide for usage per message id):
// one assistant line per content block, all lines of one API response sharing
// message.id and message.usage.

const sessionID = "8f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f"

var initLine = `{"type":"system","subtype":"init","cwd":"/work/task","session_id":"` + sessionID + `","tools":["Task","Bash","Glob","Grep","Read","Edit","Write","TodoWrite"],"mcp_servers":[],"model":"claude-sonnet-4-5-20250929","permissionMode":"bypassPermissions","slash_commands":["compact","review"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.0.14","output_style":"default","agents":["general-purpose"],"uuid":"0b6c1f9e-1111-4c2a-8d3e-000000000001"}`

// multiTurn: thinking + text + Bash in one API call, a Write, an Edit that
// fails, a final text, and the result.
var multiTurn = strings.Join([]string{
	initLine,
	`{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"The user wants tests run first.","signature":"EqQBCkYIBxgCKkB"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":15178,"cache_read_input_tokens":0,"output_tokens":120,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a1"}`,
	`{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I'll run the tests first."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":15178,"cache_read_input_tokens":0,"output_tokens":120,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a2"}`,
	`{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"go test ./...","description":"Run the tests"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":15178,"cache_read_input_tokens":0,"output_tokens":120,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a3"}`,
	`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"ok  \tgithub.com/acme/calc\t0.012s\nok  \tgithub.com/acme/calc/cmd\t0.004s","is_error":false}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"u1","tool_use_result":{"stdout":"ok","stderr":"","interrupted":false,"isImage":false}}`,
	`{"type":"assistant","message":{"id":"msg_02B","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_02","name":"Write","input":{"file_path":"out/report.md","content":"# Report\n\nAll green.\n"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":6,"cache_creation_input_tokens":310,"cache_read_input_tokens":15178,"output_tokens":95,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a4"}`,
	`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_02","type":"tool_result","content":"File created successfully at: out/report.md"}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"u2"}`,
	`{"type":"assistant","message":{"id":"msg_03C","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_03","name":"Edit","input":{"file_path":"calc.go","old_string":"return a - b","new_string":"return a + b"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":6,"cache_creation_input_tokens":120,"cache_read_input_tokens":15488,"output_tokens":80,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a5"}`,
	`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"<tool_use_error>String to replace not found in file.\nString: return a - b</tool_use_error>","is_error":true,"tool_use_id":"toolu_03"}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"u3"}`,
	`{"type":"assistant","message":{"id":"msg_04D","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"All tests pass; the report is in out/report.md — ✓ done."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":200,"cache_read_input_tokens":15608,"output_tokens":40,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"` + sessionID + `","uuid":"a6"}`,
	`{"type":"result","subtype":"success","is_error":false,"duration_ms":48211,"duration_api_ms":45102,"num_turns":7,"result":"All tests pass; the report is in out/report.md — ✓ done.","session_id":"` + sessionID + `","total_cost_usd":0.12345,"usage":{"input_tokens":21,"cache_creation_input_tokens":15808,"cache_read_input_tokens":46274,"output_tokens":335,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":21,"outputTokens":335,"cacheReadInputTokens":46274,"cacheCreationInputTokens":15808,"webSearchRequests":0,"costUSD":0.12345,"contextWindow":200000}},"permission_denials":[],"uuid":"r1"}`,
}, "\n") + "\n"

var multiTurnLog = strings.Join([]string{
	"session " + sessionID + " · model claude-sonnet-4-5-20250929",
	"I'll run the tests first.",
	"→ Bash: go test ./...",
	"← ok  \tgithub.com/acme/calc\t0.012s",
	"→ Write: out/report.md",
	"← File created successfully at: out/report.md",
	"→ Edit: calc.go",
	"← (error) <tool_use_error>String to replace not found in file.",
	"All tests pass; the report is in out/report.md — ✓ done.",
	"result: success, 7 turns, $0.1235",
}, "\n") + "\n"

var multiTurnUsage = Usage{
	Model:            "claude-sonnet-4-5-20250929",
	InputTokens:      4 + 6 + 6 + 5,
	OutputTokens:     120 + 95 + 80 + 40,
	CacheReadTokens:  0 + 15178 + 15488 + 15608,
	CacheWriteTokens: 15178 + 310 + 120 + 200,
	Calls:            4,
}

func ptr[T any](v T) *T { return &v }

func decode(t testing.TB, chunks ...string) (*Decoder, string) {
	t.Helper()
	var log bytes.Buffer
	d := New(&log)
	for _, c := range chunks {
		n, err := d.Write([]byte(c))
		if n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(c))
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return d, log.String()
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func checkFinal(t *testing.T, got, want Final) {
	t.Helper()
	if got.Text != want.Text || got.Subtype != want.Subtype || got.IsError != want.IsError ||
		got.SessionID != want.SessionID || got.Model != want.Model ||
		!eqPtr(got.Turns, want.Turns) || !eqPtr(got.CostUSD, want.CostUSD) ||
		!eqPtr(got.InputTokens, want.InputTokens) || !eqPtr(got.OutputTokens, want.OutputTokens) ||
		!eqPtr(got.CacheReadTokens, want.CacheReadTokens) || !eqPtr(got.CacheWriteTokens, want.CacheWriteTokens) {
		t.Errorf("Result =\n%s\nwant\n%s", fmtFinal(got), fmtFinal(want))
	}
}

func fmtFinal(f Final) string {
	p := func(v any) string {
		switch v := v.(type) {
		case *int:
			if v != nil {
				return fmt.Sprint(*v)
			}
		case *int64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		case *float64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		}
		return "nil"
	}
	return fmt.Sprintf("text=%q subtype=%q err=%v session=%q model=%q turns=%s cost=%s in=%s out=%s cr=%s cw=%s",
		f.Text, f.Subtype, f.IsError, f.SessionID, f.Model, p(f.Turns), p(f.CostUSD),
		p(f.InputTokens), p(f.OutputTokens), p(f.CacheReadTokens), p(f.CacheWriteTokens))
}

var multiTurnFinal = Final{
	Text:             "All tests pass; the report is in out/report.md — ✓ done.",
	Subtype:          "success",
	SessionID:        sessionID,
	Model:            "claude-sonnet-4-5-20250929",
	Turns:            ptr(7),
	CostUSD:          ptr(0.12345),
	InputTokens:      ptr[int64](21),
	OutputTokens:     ptr[int64](335),
	CacheReadTokens:  ptr[int64](46274),
	CacheWriteTokens: ptr[int64](15808),
}

func TestDecoder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		log      string
		final    *Final // nil: no result expected
		usage    Usage
		checkLog func(t *testing.T, log string) // instead of log
	}{
		{
			name:  "multi-turn with Bash, Write, Edit and a result",
			in:    multiTurn,
			log:   multiTurnLog,
			final: &multiTurnFinal,
			usage: multiTurnUsage,
		},
		{
			name: "missing result: the run was killed",
			in: initLine + "\n" +
				`{"type":"assistant","message":{"id":"msg_1","model":"claude-opus-4-1-20250805","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 3600"}}],"usage":{"input_tokens":3,"output_tokens":20,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}},"parent_tool_use_id":null,"session_id":"s"}` + "\n",
			log: "session " + sessionID + " · model claude-sonnet-4-5-20250929\n→ Bash: sleep 3600\n",
			usage: Usage{Model: "claude-opus-4-1-20250805", InputTokens: 3, OutputTokens: 20,
				CacheReadTokens: 100, CacheWriteTokens: 7, Calls: 1},
		},
		{
			name: "error result: max turns, no result text, fields absent stay nil",
			in:   `{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":1200,"duration_api_ms":1100,"num_turns":3,"session_id":"s-err","total_cost_usd":0.5}` + "\n",
			log:  "result: error_max_turns, 3 turns, $0.5000\n",
			final: &Final{Subtype: "error_max_turns", IsError: true, SessionID: "s-err",
				Turns: ptr(3), CostUSD: ptr(0.5)},
		},
		{
			name: "is_error on a success subtype (API error) is an error",
			in: `{"type":"assistant","message":{"id":"msg_e","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 529 Overloaded"}],"usage":{"input_tokens":0,"output_tokens":0}},"parent_tool_use_id":null,"session_id":"s","error":"server_error","isApiErrorMessage":true}` + "\n" +
				`{"type":"result","subtype":"success","is_error":true,"duration_ms":247,"num_turns":1,"result":"API Error: 529 Overloaded","session_id":"s","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"modelUsage":{}}` + "\n",
			log: "API Error: 529 Overloaded\nresult: success, 1 turns, $0.0000 (error)\n",
			final: &Final{Text: "API Error: 529 Overloaded", Subtype: "success", IsError: true, SessionID: "s",
				Turns: ptr(1), CostUSD: ptr(0.0), InputTokens: ptr[int64](0), OutputTokens: ptr[int64](0),
				CacheReadTokens: ptr[int64](0), CacheWriteTokens: ptr[int64](0)},
		},
		{
			name: "model from the single modelUsage key, session from init when the result has none",
			in: `{"type":"system","subtype":"init","session_id":"s-init"}` + "\n" +
				`{"type":"result","subtype":"error_during_execution","is_error":false,"modelUsage":{"claude-haiku-4-5-20251001":{"inputTokens":1}}}` + "\n",
			log: "session s-init · model ?\nresult: error_during_execution, ? turns, $?\n",
			final: &Final{Subtype: "error_during_execution", IsError: true, SessionID: "s-init",
				Model: "claude-haiku-4-5-20251001"},
		},
		{
			name: "usage counted once per message id, raised to the largest report",
			in: strings.Join([]string{
				`{"type":"assistant","message":{"id":"msg_A","model":"m1","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":100,"cache_creation_input_tokens":5}}}`,
				`{"type":"assistant","message":{"id":"msg_A","model":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.go"}}],"usage":{"input_tokens":10,"output_tokens":30,"cache_read_input_tokens":100,"cache_creation_input_tokens":5}}}`,
				`{"type":"assistant","message":{"id":"msg_A","model":"m1","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b.go"}}],"usage":{"input_tokens":10,"output_tokens":30,"cache_read_input_tokens":100,"cache_creation_input_tokens":5}}}`,
				`{"type":"assistant","message":{"id":"msg_B","model":"m1","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":2,"output_tokens":4,"cache_read_input_tokens":200,"cache_creation_input_tokens":0}}}`,
				// A subagent's call counts, but does not change the run's model.
				`{"type":"assistant","message":{"id":"msg_S","model":"m-sub","content":[{"type":"text","text":"sub"}],"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":"toolu_task"}`,
				// Without an id nothing can be deduplicated: each line counts.
				`{"type":"assistant","message":{"model":"m1","content":[],"usage":{"input_tokens":1}}}`,
				`{"type":"assistant","message":{"model":"m1","content":[],"usage":{"input_tokens":1}}}`,
				// Synthetic messages are no API call.
				`{"type":"assistant","message":{"id":"msg_X","model":"<synthetic>","content":[],"usage":{"input_tokens":999,"output_tokens":999}}}`,
			}, "\n") + "\n",
			log:   "a\n→ Read: a.go\n→ Read: b.go\nb\nsub\n",
			usage: Usage{Model: "m1", InputTokens: 15, OutputTokens: 35, CacheReadTokens: 300, CacheWriteTokens: 5, Calls: 5},
		},
		{
			name: "garbage lines pass through unchanged and decoding goes on",
			in: "Error: something the CLI printed\n" +
				"\n" +
				"{not json at all\n" +
				`{"no_type":1}` + "\n" +
				`[1,2,3]` + "\n" +
				"\x00\xff\xfe binary\r\n" +
				`{"type":"assistant","message":5}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":""},{"type":"text","text":"\n  second line is the first non-blank"},{"type":"image","source":{}}]}]}}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"mcp__fs__list","input":{"dir":"/tmp","depth":2}},{"type":"tool_use","name":"TodoWrite","input":{"todos":[{"content":"x"},{"content":"y"}]}},{"type":"tool_use","name":"Bash","input":{"command":"set -e\ngo build ./...\ngo test ./..."}},{"type":"tool_use","name":"Noop","input":{}}]}}` + "\n" +
				`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}` + "\n" +
				`{"type":"stream_event","event":{"type":"message_start"}}` + "\n" +
				`{"type":"system","subtype":"compact_boundary"}` + "\n",
			log: "Error: something the CLI printed\n" +
				"\n" +
				"{not json at all\n" +
				`{"no_type":1}` + "\n" +
				`[1,2,3]` + "\n" +
				"\x00\xff\xfe binary\r\n" +
				"←   second line is the first non-blank\n" +
				`→ mcp__fs__list: {"dir":"/tmp","depth":2}` + "\n" +
				"→ TodoWrite: 2 items\n" +
				"→ Bash: set -e …\n" +
				"→ Noop\n" +
				"· rate_limit_event\n" +
				"· system compact_boundary\n",
		},
		{
			name: "final line without newline is flushed by Close",
			in:   "plain\n" + `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"hi","session_id":"s","total_cost_usd":0.01}`,
			log:  "plain\nresult: success, 1 turns, $0.0100\n",
			final: &Final{Text: "hi", Subtype: "success", SessionID: "s",
				Turns: ptr(1), CostUSD: ptr(0.01)},
		},
		{
			name: "a final non-JSON line without newline stays without one",
			in:   "partial output",
			log:  "partial output",
		},
		{
			name: "long tool input and result are cut to about 200 bytes on a rune boundary",
			in: `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"echo ` + strings.Repeat("é", 150) + `"}}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","content":"` + strings.Repeat("x", 500) + `"}]}}` + "\n",
			checkLog: func(t *testing.T, log string) {
				lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
				if len(lines) != 2 {
					t.Fatalf("log has %d lines: %q", len(lines), log)
				}
				for _, l := range lines {
					if len(l) > summaryMax+16 || !strings.HasSuffix(l, "…") || !utf8.ValidString(l) {
						t.Errorf("line not cut cleanly (%d bytes): %q", len(l), l)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, log := decode(t, tc.in)
			if tc.checkLog != nil {
				tc.checkLog(t, log)
			} else if log != tc.log {
				t.Errorf("log =\n%q\nwant\n%q", log, tc.log)
			}
			got, ok := d.Result()
			if ok != (tc.final != nil) {
				t.Fatalf("Result ok = %v, want %v", ok, tc.final != nil)
			}
			if ok {
				checkFinal(t, got, *tc.final)
			}
			if u := d.Running(); u != tc.usage {
				t.Errorf("Running = %+v, want %+v", u, tc.usage)
			}
		})
	}
}

// TestChunking feeds the multi-turn transcript split at every byte boundary
// (including inside multi-byte runes) and one byte at a time: the log and the
// result must not depend on how the pipe delivered the bytes.
func TestChunking(t *testing.T) {
	in := multiTurn
	for i := 0; i <= len(in); i++ {
		d, log := decode(t, in[:i], in[i:])
		if log != multiTurnLog {
			t.Fatalf("split at %d: log =\n%q\nwant\n%q", i, log, multiTurnLog)
		}
		got, ok := d.Result()
		if !ok {
			t.Fatalf("split at %d: no result", i)
		}
		checkFinal(t, got, multiTurnFinal)
		if u := d.Running(); u != multiTurnUsage {
			t.Fatalf("split at %d: Running = %+v", i, u)
		}
	}
	bytewise := make([]string, len(in))
	for i := 0; i < len(in); i++ { // bytes, not runes
		bytewise[i] = in[i : i+1]
	}
	if _, log := decode(t, bytewise...); log != multiTurnLog {
		t.Fatalf("byte by byte: log =\n%q", log)
	}
}

// TestHugeLine: a line over MaxLine is passed through raw in pieces, the
// buffer stays bounded, and the next line decodes normally.
func TestHugeLine(t *testing.T) {
	huge := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("A", MaxLine+10) + `"}]}}`
	next := `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"total_cost_usd":1}`
	var log bytes.Buffer
	d := New(&log)
	in := huge + "\n" + next + "\n"
	for len(in) > 0 {
		n := min(len(in), 64<<10)
		d.Write([]byte(in[:n]))
		in = in[n:]
		if cap(d.buf) > MaxLine+64<<10 {
			t.Fatalf("buffer grew to %d bytes", cap(d.buf))
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	want := huge + "\n" + "result: success, 2 turns, $1.0000\n"
	if log.String() != want {
		t.Fatalf("log: got %d bytes, want %d; tail %q", log.Len(), len(want), tail(log.String()))
	}
	if f, ok := d.Result(); !ok || f.Turns == nil || *f.Turns != 2 {
		t.Fatalf("Result after a huge line = %+v, %v", f, ok)
	}

	// A line longer than MaxLine arriving in one chunk, newline included.
	log.Reset()
	d = New(&log)
	d.Write([]byte(huge + "\n" + next + "\n"))
	d.Close()
	if log.String() != want {
		t.Fatalf("one chunk: log tail %q", tail(log.String()))
	}
	// Without any newline: passed through as it comes, never buffered whole.
	log.Reset()
	d = New(&log)
	for range 3 {
		d.Write([]byte(strings.Repeat("B", MaxLine/2+1)))
	}
	if cap(d.buf) > MaxLine {
		t.Fatalf("buffer grew to %d bytes", cap(d.buf))
	}
	d.Close()
	if log.Len() != 3*(MaxLine/2+1) {
		t.Fatalf("no-newline stream: logged %d bytes", log.Len())
	}
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

// TestLogErrorDoesNotStopDecoding: a failing log must not make Write fail (the
// worker's pipe would fill) nor lose the result; Close reports it.
func TestLogErrorDoesNotStopDecoding(t *testing.T) {
	w := &failWriter{}
	d := New(w)
	if n, err := d.Write([]byte(multiTurn)); n != len(multiTurn) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := d.Close(); err == nil {
		t.Fatal("Close did not report the log's error")
	}
	if w.n != 1 {
		t.Errorf("log written %d times after failing", w.n)
	}
	if _, ok := d.Result(); !ok {
		t.Fatal("result lost")
	}
	// A nil log discards.
	if n, err := New(nil).Write([]byte(multiTurn)); n != len(multiTurn) || err != nil {
		t.Fatalf("nil log: Write = %d, %v", n, err)
	}
}

// TestConcurrentReaders: Result and Running from another goroutine while the
// stream is written (run with -race).
func TestConcurrentReaders(t *testing.T) {
	d := New(nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				d.Running()
				if f, ok := d.Result(); ok && f.Turns != nil {
					*f.Turns = -1 // the caller's own copy
				}
			}
		}
	}()
	for i := 0; i < len(multiTurn); i += 7 {
		d.Write([]byte(multiTurn[i:min(i+7, len(multiTurn))]))
	}
	d.Close()
	close(stop)
	wg.Wait()
	f, _ := d.Result()
	checkFinal(t, f, multiTurnFinal)
}

func FuzzDecoder(f *testing.F) {
	// Short seeds: the fuzzer minimizes every interesting input, and a long
	// transcript would spend the fuzzing time there.
	f.Add([]byte(`{"type":"system","subtype":"init","session_id":"s","model":"m"}
{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"hi ✓"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":3,"output_tokens":9}}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok","is_error":true}]}}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done","total_cost_usd":0.01,"usage":{"input_tokens":3},"modelUsage":{"m":{}}}
`), uint16(100))
	f.Add([]byte("garbage\n{\"type\":\"result\",\"num_turns\":-1,\"total_cost_usd\":\"x\"}\n{"), uint16(3))
	f.Add([]byte(`{"type":"assistant","message":{"id":1,"content":[{"type":"tool_use","input":[]},null,7],"usage":{"input_tokens":1e30}}}`), uint16(0))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":{"a":1},"is_error":"yes"}]}}`+"\n\xe2\x82"), uint16(5))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		var log bytes.Buffer
		d := New(&log)
		s := int(split) % (len(data) + 1)
		d.Write(data[:s])
		d.Write(data[s:])
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d.Result()
		u := d.Running()
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || u.Calls < 0 {
			t.Fatalf("negative usage %+v", u)
		}
		// Without a '{' no line can be a message: everything passes through.
		if !bytes.ContainsRune(data, '{') && !bytes.Equal(log.Bytes(), data) {
			t.Fatalf("non-JSON input changed:\n%q\n%q", data, log.Bytes())
		}
	})
}
