package models

import "strings"

// WithoutStage returns a diagnosis without the code prefix "stage: " it may begin
// with (case-insensitively, repeated), so that whoever shows it beside its stage, or
// composes StageText, names the stage once.
func WithoutStage(stage, diagnosis string) string {
	d := strings.TrimSpace(diagnosis)
	if stage == "" {
		return d
	}
	p := stage + ":"
	for len(d) >= len(p) && strings.EqualFold(d[:len(p)], p) {
		d = strings.TrimSpace(d[len(p):])
	}
	return d
}

// StageText is a failure's diagnosis with its stage as a code prefix, added once:
// "contradiction: the output claims completion …", never "contradiction:
// contradiction: …". An empty stage leaves the diagnosis as it is.
func StageText(stage, diagnosis string) string {
	d := WithoutStage(stage, diagnosis)
	if stage == "" {
		return d
	}
	return stage + ": " + d
}
