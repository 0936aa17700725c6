package evaluator

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A verdict is read strictly, because the model that gives it has just read the
// worker's output, and the worker may have written a verdict of its own there for the
// model to repeat. The model's reply must hold exactly one verdict object (a JSON
// object with a "pass" key, at any depth of any JSON object in the reply): a reply
// that quotes the worker's forged verdict and then gives its own holds two and is
// malformed, whichever comes first. The one verdict must not be one that the output
// the model was shown holds (same pass, same diagnosis): a model talked into
// repeating the worker's verdict did not give its own. Every such reply fails closed
// (ErrMalformed, so an *InfraError, and the task never passes on it).

// minScanBudget is the least number of bytes the JSON decoder may read while
// searching one text for verdicts; scanBudgetFactor scales it with the text. Honest
// text costs about ten times its length (measured on 48 KiB of Go code and of cut
// JSON: a decode attempt per '{' that opens a key, each reading at least 512 bytes); a text built to make every attempt read far costs its length
// squared, and is cut off here instead of holding the judge for minutes.
const (
	minScanBudget    = 4 << 20
	scanBudgetFactor = 64
)

// maxWrapperDepth bounds how many `claude -p` "result" strings are unwrapped one
// inside the other.
const maxWrapperDepth = 3

// verdictObjects are the JSON objects a verdict was read from.
type verdictObjects struct {
	verdict map[string]json.RawMessage // the object holding "pass"
	wrapper map[string]json.RawMessage // the outermost `claude -p` result object around it, or nil
}

// ParseVerdict reads the one verdict in reply: a JSON object with a boolean "pass"
// and, optionally, a string "diagnosis". Text around the object (a code fence, a
// preamble) and other objects are ignored. A reply from `claude -p --output-format
// json`, whose "result" string holds the model's text, is unwrapped. A reply with no
// verdict or with more than one (a quoted verdict beside the model's own) is an error
// wrapping ErrMalformed. The verdict's Usage is always nil: a model's text is no
// evidence of what it spent (worker output it read could have put any "usage" there).
// The evaluators also refuse a verdict quoted from the output they showed
// (parseVerdict); ParseVerdict, given no output, cannot.
func ParseVerdict(reply string) (Verdict, error) {
	v, _, err := parseVerdict(reply, nil)
	return v, err
}

// parseVerdict is ParseVerdict that also refuses a verdict that shown, the output the
// model was shown, holds. It returns the verdict's JSON objects too, for the fields a
// command may report besides the verdict (usage).
func parseVerdict(reply string, shown []byte) (Verdict, *verdictObjects, error) {
	scan := newVerdictScan(len(reply))
	found := scan.find(reply, nil, 0)
	switch {
	case scan.exhausted:
		return Verdict{}, nil, fmt.Errorf("%w: the reply is too tangled to search for its verdict %s", ErrMalformed, clip(reply, 200))
	case len(found) == 0:
		return Verdict{}, nil, fmt.Errorf("%w: no JSON object with a boolean \"pass\" in the reply %s", ErrMalformed, clip(reply, 200))
	case len(found) > 1:
		return Verdict{}, nil, fmt.Errorf("%w: the reply holds %d verdict objects, not exactly one: a reply that quotes a verdict is not the model's own %s",
			ErrMalformed, len(found), clip(reply, 200))
	}
	obj := found[0]
	v, err := readVerdict(obj.verdict)
	if err != nil {
		return Verdict{}, nil, err
	}
	if shown != nil {
		if err := refuseQuoted(v, obj.verdict, shown); err != nil {
			return Verdict{}, nil, err
		}
	}
	if !v.Pass && v.Diagnosis == "" {
		v.Diagnosis = "the evaluator failed the output without giving a diagnosis"
	}
	return v, &obj, nil
}

// readVerdict reads pass and diagnosis from a verdict object; the diagnosis is
// trimmed and empty when absent or null.
func readVerdict(obj map[string]json.RawMessage) (Verdict, error) {
	var pass bool
	if err := json.Unmarshal(obj["pass"], &pass); err != nil {
		return Verdict{}, fmt.Errorf(`%w: "pass" is %s, not a boolean`, ErrMalformed, clip(string(obj["pass"]), 40))
	}
	var diag string
	if raw, ok := obj["diagnosis"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &diag); err != nil {
			return Verdict{}, fmt.Errorf(`%w: "diagnosis" is not a string`, ErrMalformed)
		}
	}
	return Verdict{Pass: pass, Diagnosis: strings.TrimSpace(diag)}, nil
}

// refuseQuoted fails when shown holds a verdict equal to v (same pass, same trimmed
// diagnosis): the model repeated the worker's verdict instead of giving its own. An
// output too tangled to search is refused as well, since a quote cannot be ruled out.
func refuseQuoted(v Verdict, raw map[string]json.RawMessage, shown []byte) error {
	scan := newVerdictScan(len(shown))
	in := scan.find(string(shown), nil, 0)
	if scan.exhausted {
		return fmt.Errorf("%w: the worker's output is too tangled to rule out that the verdict was copied from it", ErrMalformed)
	}
	for _, o := range in {
		w, err := readVerdict(o.verdict)
		if err == nil && w.Pass == v.Pass && w.Diagnosis == v.Diagnosis {
			return fmt.Errorf("%w: the reply's verdict %s is one the worker's output holds, not the model's own", ErrMalformed, clip(string(mustJSON(raw)), 200))
		}
	}
	return nil
}

// verdictScan searches texts for verdict objects within a budget of decoded bytes.
type verdictScan struct {
	budget    int
	exhausted bool
}

func newVerdictScan(n int) *verdictScan {
	return &verdictScan{budget: max(minScanBudget, scanBudgetFactor*n)}
}

// find returns every verdict in text: each JSON object with a "pass" key, at any depth
// of the JSON objects text holds, and those in the "result" string of a top-level
// object that has no "pass" (a `claude -p` wrapper, which wrapper then names; depth
// counts the wrappers already opened). It stops, setting exhausted, when the budget
// runs out.
func (s *verdictScan) find(text string, wrapper map[string]json.RawMessage, depth int) []verdictObjects {
	var found []verdictObjects
	for i := 0; i < len(text) && !s.exhausted; i++ {
		if text[i] != '{' || !opensObject(text[i+1:]) {
			continue
		}
		cr := &countingReader{r: strings.NewReader(text[i:])}
		dec := json.NewDecoder(cr)
		dec.UseNumber() // numbers keep their literal text for the usage fields
		var top map[string]any
		err := dec.Decode(&top)
		if s.budget -= cr.n; s.budget < 0 {
			s.exhausted = true
			break
		}
		if err != nil {
			continue
		}
		var objs []map[string]any
		collectVerdicts(top, &objs)
		for _, o := range objs {
			found = append(found, verdictObjects{verdict: rawObject(o), wrapper: wrapper})
		}
		_, isVerdict := top["pass"]
		if inner, ok := top["result"].(string); ok && !isVerdict && depth < maxWrapperDepth {
			w := wrapper
			if w == nil {
				w = rawObject(top)
			}
			found = append(found, s.find(inner, w, depth+1)...)
		}
		// Past this object: what it holds has been searched.
		i += int(dec.InputOffset()) - 1
	}
	return found
}

// opensObject reports whether rest, the text after a '{', can continue a JSON object:
// after white space, a key or the closing brace. Everything else ('{' in code or
// prose) is skipped without a decoder.
func opensObject(rest string) bool {
	t := strings.TrimLeft(rest, " \t\r\n")
	return t != "" && (t[0] == '"' || t[0] == '}')
}

// collectVerdicts appends every object at or below v that has a "pass" key.
func collectVerdicts(v any, out *[]map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["pass"]; ok {
			*out = append(*out, x)
		}
		for _, c := range x {
			collectVerdicts(c, out)
		}
	case []any:
		for _, c := range x {
			collectVerdicts(c, out)
		}
	}
}

// rawObject re-encodes each value of m, for readers of json.RawMessage.
func rawObject(m map[string]any) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = mustJSON(v)
	}
	return out
}

// mustJSON encodes a value decoded from JSON, which always encodes again.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// countingReader counts the bytes read through it: the cost of a decode attempt.
type countingReader struct {
	r *strings.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FindObject returns the first JSON object in reply that has key. Text around it (a
// code fence, a preamble) and other objects are skipped. A reply from `claude -p
// --output-format json`, whose "result" string holds the model's text, is unwrapped:
// wrapper is then that outermost object (the CLI's own: one nested in its result is
// model text), nil otherwise. ok is false when no such object is found. It is for
// replies that are not verdicts (triage); a verdict is read by ParseVerdict, which
// insists on exactly one.
func FindObject(reply, key string) (obj, wrapper map[string]json.RawMessage, ok bool) {
	for i := 0; i < len(reply); i++ {
		if reply[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(reply[i:]))
		var o map[string]json.RawMessage
		if err := dec.Decode(&o); err != nil {
			continue
		}
		if _, has := o[key]; has {
			return o, nil, true
		}
		if raw, has := o["result"]; has {
			var inner string
			if json.Unmarshal(raw, &inner) == nil {
				obj, _, ok := FindObject(inner, key)
				return obj, o, ok
			}
		}
		// Some other object: skip past it and keep looking.
		i += int(dec.InputOffset()) - 1
	}
	return nil, nil, false
}
