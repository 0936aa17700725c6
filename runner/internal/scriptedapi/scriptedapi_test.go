package scriptedapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// post sends body to url with a bearer key and returns the data lines of the event
// stream (or the whole body, as one line, when it is not a stream).
func post(t *testing.T, url, body string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	var data []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, line)
		} else if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			data = append(data, sc.Text())
		}
	}
	return data
}

// field decodes one JSON line's value at a dotted path of object keys.
func field(t *testing.T, line, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

var script = []Turn{
	{Text: "Writing.", Calls: []Call{{Name: "write", Args: map[string]string{"path": "a"}}}, Usage: Usage{Input: 100, Cached: 40, Output: 20, Reasoning: 5}},
	{Text: "Done.", Usage: Usage{Input: 150, Cached: 100, Output: 10}},
}

// TestResponses drives the scripted Responses API as a client would: the events of a
// streamed turn in order, the call's arguments, the usage on response.completed, a
// tool result recorded once though each request repeats it, a side call apart.
func TestResponses(t *testing.T) {
	s := NewResponses(t, "m", script...)
	data := post(t, s.URL+"/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"write"}],"input":"go"}`)
	var types []string
	for _, d := range data {
		types = append(types, field(t, d, "type").(string))
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("events %q; want %q", types, want)
	}
	if args := field(t, data[11], "item.arguments"); args != `{"path":"a"}` {
		t.Errorf("the call's arguments: %v", args)
	}
	last := data[len(data)-1]
	if in, cached := field(t, last, "response.usage.input_tokens"), field(t, last, "response.usage.input_tokens_details.cached_tokens"); in != 100.0 || cached != 40.0 {
		t.Errorf("the usage: input %v cached %v", in, cached)
	}
	result := `{"type":"function_call_output","call_id":"call_1_0","output":"ok"}`
	post(t, s.URL+"/responses", `{"model":"m","stream":false,"tools":[{}],"input":[`+result+`]}`)
	post(t, s.URL+"/responses", `{"model":"m","stream":false,"tools":[{}],"input":[`+result+`]}`)
	post(t, s.URL+"/responses", `{"model":"m","input":"a title, please"}`)
	if got := s.Sum(); got != (Usage{Input: 250, Cached: 140, Output: 30, Reasoning: 5}) {
		t.Errorf("the sum %+v; the past-the-script call reports none", got)
	}
	if len(s.LoopCalls()) != 3 || s.SideCalls() != 1 || !reflect.DeepEqual(s.ToolResults(), []string{`"ok"`}) || !reflect.DeepEqual(s.Keys(), []string{"sk-test"}) {
		t.Errorf("the server saw %s, keys %q", s.Report(), s.Keys())
	}
}

// TestChat drives the scripted Chat Completions API: the streamed chunks end in a
// finish reason, the usage chunk only when asked for, then [DONE]; whole, the usage
// is in the body.
func TestChat(t *testing.T) {
	s := NewChat(t, "m", script...)
	data := post(t, s.URL+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"tools":[{}],"messages":[{"role":"user","content":"go"}]}`)
	if n := len(data); n != 6 || data[n-1] != "[DONE]" {
		t.Fatalf("chunks %q", data)
	}
	if name := field(t, data[2], "choices"); name == nil {
		t.Fatalf("no tool call chunk: %q", data[2])
	}
	if reason := field(t, data[3], "choices").([]any)[0].(map[string]any)["finish_reason"]; reason != "tool_calls" {
		t.Errorf("the finish reason %v", reason)
	}
	if in, cached := field(t, data[4], "usage.prompt_tokens"), field(t, data[4], "usage.prompt_tokens_details.cached_tokens"); in != 100.0 || cached != 40.0 {
		t.Errorf("the usage chunk %q", data[4])
	}
	data = post(t, s.URL+"/chat/completions", `{"model":"m","stream":true,"tools":[{}],"messages":[{"role":"tool","tool_call_id":"call_1_0","content":"ok"}]}`)
	if len(data) != 4 {
		t.Errorf("unasked, a usage chunk was sent: %q", data)
	}
	whole := post(t, s.URL+"/chat/completions", `{"model":"m","tools":[{}],"messages":[]}`)
	if out := field(t, whole[0], "usage.completion_tokens"); out != 0.0 {
		t.Errorf("past the script, the usage %v", out)
	}
	if len(s.LoopCalls()) != 3 || !reflect.DeepEqual(s.ToolResults(), []string{`"ok"`}) {
		t.Errorf("the server saw %s", s.Report())
	}
}

// TestGemini drives the scripted Gemini API: streamed, the text then the call, the
// last chunk with the usage (thoughts apart from the candidates); a JSON side call
// gets JSON; an unknown path is 404 and recorded.
func TestGemini(t *testing.T) {
	s := NewGemini(t, "g", script...)
	data := post(t, s.URL+"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"write"}]}]}`)
	if len(data) != 2 {
		t.Fatalf("chunks %q", data)
	}
	call := field(t, data[1], "candidates").([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0]
	if name := call.(map[string]any)["functionCall"].(map[string]any)["name"]; name != "write" {
		t.Errorf("the call %v", call)
	}
	if c, th := field(t, data[1], "usageMetadata.candidatesTokenCount"), field(t, data[1], "usageMetadata.thoughtsTokenCount"); c != 15.0 || th != 5.0 {
		t.Errorf("the usage %q", data[1])
	}
	side := post(t, s.URL+"/v1beta/models/g:generateContent", `{"contents":[],"generationConfig":{"responseMimeType":"application/json"}}`)
	text := field(t, side[0], "candidates").([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
	if text != "{}" || s.SideCalls() != 1 {
		t.Errorf("the JSON side call got %v; the server saw %s", text, s.Report())
	}
	resp, err := http.Post(s.URL+"/v1/other", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || len(s.Unscripted()) != 1 {
		t.Errorf("an unknown path: %s; recorded %q", resp.Status, s.Unscripted())
	}
}

// TestResponsesCustomCall checks a free-form call is streamed as a custom_tool_call
// whose input is the script's text as is, not JSON.
func TestResponsesCustomCall(t *testing.T) {
	s := NewResponses(t, "m", Turn{Calls: []Call{{Name: "exec", Custom: true, Args: "await tools.x();"}}})
	data := post(t, s.URL+"/responses", `{"model":"m","stream":true,"input":[{"type":"additional_tools","tools":[{}]}]}`)
	var types []string
	for _, d := range data {
		types = append(types, field(t, d, "type").(string))
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("events %q; want %q", types, want)
	}
	if typ, input := field(t, data[5], "item.type"), field(t, data[5], "item.input"); typ != "custom_tool_call" || input != "await tools.x();" {
		t.Errorf("the item: %q", data[5])
	}
	if len(s.LoopCalls()) != 1 {
		t.Errorf("tools offered in an input item are not a loop call: %s", s.Report())
	}
}
