package streamjson

import (
	"bytes"
	"encoding/json"
	"math"
)

// The getters read one field of a decoded object, reporting false when it is
// absent, null or of another type: the stream is untrusted, and one odd field
// must not cost the rest of the message.

func getObject(m object, k string) object {
	var o object
	if raw, ok := m[k]; ok && json.Unmarshal(raw, &o) == nil {
		return o
	}
	return nil
}

func getArray(m object, k string) []json.RawMessage {
	var a []json.RawMessage
	if raw, ok := m[k]; ok && json.Unmarshal(raw, &a) == nil {
		return a
	}
	return nil
}

func getString(m object, k string) (string, bool) {
	return asString(m[k])
}

func asString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func getBool(m object, k string) (bool, bool) {
	var b bool
	if raw, ok := m[k]; ok && json.Unmarshal(raw, &b) == nil && !isNull(raw) {
		return b, true
	}
	return false, false
}

func getFloat(m object, k string) (float64, bool) {
	raw := bytes.TrimSpace(m[k])
	if len(raw) == 0 || raw[0] == '"' || isNull(raw) {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// getCount reads a non-negative integer count (a float with no fraction is
// accepted: some encoders write 12.0).
func getCount(m object, k string) (int64, bool) {
	raw := bytes.TrimSpace(m[k])
	if len(raw) == 0 || raw[0] == '"' || isNull(raw) {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		if i < 0 {
			return 0, false
		}
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

func countPtr(m object, k string) *int64 {
	if n, ok := getCount(m, k); ok {
		return &n
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
