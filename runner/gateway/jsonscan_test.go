package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// scanSeeds are bodies that trip naive scanners: quotes and backslashes in
// strings, wanted names nested deeper or inside strings, escaped key names.
var scanSeeds = []string{
	`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`,
	` { "messages" : [ {"content":"say \"model\": \"x\", \\\\"} ], "model" : "m1" , "max_tokens" : 7 } `,
	`{"messages":[{"model":"nested","max_tokens":999999}],"model":"top","max_tokens":5}`,
	`{"a":"\\","model":"after-backslash","b":"\\\"still a string\\\\"}`,
	`{"\u006dodel":"escaped-key","max_tokens":null}`,
	`{"tools":[[],{},[{"x":[1,2,{"y":"]}"}]}]],"model":"deep","n":3}`,
	`{"model":"x","stream_options":{"include_usage":false,"other":1},"stream":true}`,
	`{}`,
}

// TestTopFieldsAgreesWithEncodingJSON: on every seed, the scanner finds the same
// model, limits and stream flag as encoding/json.
func TestTopFieldsAgreesWithEncodingJSON(t *testing.T) {
	for _, seed := range scanSeeds {
		agree(t, []byte(seed))
	}
}

// FuzzTopFields checks the same on any JSON object the fuzzer finds. Run with
// go test -run '^$' -fuzz FuzzTopFields -fuzztime 30s ./runner/gateway/
func FuzzTopFields(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var obj map[string]json.RawMessage
		if !json.Valid(body) || json.Unmarshal(body, &obj) != nil || obj == nil {
			return
		}
		agree(t, body)
	})
}

// agree fails unless topFields reads body's wanted members as encoding/json does;
// a body that names a wanted member twice must be refused.
func agree(t *testing.T, body []byte) {
	t.Helper()
	want, stdErr := reference(body)
	fields, err := topFields(body, requestFields)
	if dupWanted(body) {
		if err == nil {
			t.Fatalf("%s: a duplicated member was not refused", body)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var got wireRequest
	for key, sp := range fields {
		if e := json.Unmarshal(sp.raw, got.field(key)); e != nil && stdErr == nil {
			t.Fatalf("%s: member %s: %v", body, key, e)
		}
	}
	if stdErr != nil {
		return // a wanted member of the wrong type: parseRequest refuses it
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\nscanner  %s\nstdlib   %s", body, g, w)
	}
}

// reference reads body's wanted members with encoding/json, keys matched exactly
// (as the providers match them; encoding/json alone would match any case).
func reference(body []byte) (wireRequest, error) {
	var w wireRequest
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return w, err
	}
	for key, raw := range members {
		if requestFields[key] {
			if err := json.Unmarshal(raw, w.field(key)); err != nil {
				return w, err
			}
		}
	}
	return w, nil
}

// dupWanted reports whether body names a wanted top-level member twice.
func dupWanted(body []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	_, _ = dec.Token()
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		if requestFields[k] && seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// TestDuplicateLimitRefused: {"max_tokens":1,"max_tokens":100000} would reserve
// for one token if the gateway read the first and the provider the last.
func TestDuplicateLimitRefused(t *testing.T) {
	if _, _, err := parseRequest(kindMessages, []byte(`{"model":"m","max_tokens":1,"max_tokens":100000}`)); err == nil {
		t.Fatal("a duplicated max_tokens was accepted")
	}
}

// TestWithStreamUsage: the usage option is added whether stream_options is absent,
// null or an object with other members, and the result is JSON with the rest kept.
func TestWithStreamUsage(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-5","stream":true,"messages":[{"content":"{\"stream_options\":1}"}]}`,
		` {"model":"gpt-5","stream":true,"stream_options":null}`,
		`{"model":"gpt-5","stream_options":{"include_usage":false,"keep":"me"},"stream":true}`,
		`{"model":"gpt-5","stream":true,"stream_options":{"Include_Usage":true}}`, // the provider matches keys exactly
	} {
		req, fields, err := parseRequest(kindChat, []byte(body))
		if err != nil || req.includesUsage() {
			t.Fatalf("%s: %v, includes usage %v", body, err, req.includesUsage())
		}
		out, err := withStreamUsage([]byte(body), fields)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Model         string
			Stream        bool
			StreamOptions map[string]any `json:"stream_options"`
			Messages      []any
		}
		if err := json.Unmarshal(out, &got); err != nil || got.StreamOptions["include_usage"] != true || got.Model != "gpt-5" || !got.Stream {
			t.Fatalf("%s → %s (%v)", body, out, err)
		}
		if strings.Contains(body, "keep") && got.StreamOptions["keep"] != "me" {
			t.Fatalf("lost a member: %s", out)
		}
	}
}
