package fileparts

import (
	"strings"

	"github.com/countersign/countersign/models/formats/ini"
)

// INI parts (setup.cfg#[tool:pytest], tox.ini#[pytest], pytest.ini#[pytest]).
//
// Sections are split as pytest's iniconfig splits them, by models/formats/ini
// (the one INI reader: its lines and headers). A section runs from its header to
// the next header; a header names the protected section when its name equals the
// part's, or does so once trimmed (newer iniconfig can strip it). Comment lines
// (first non-blank '#' or ';'), blank lines and trailing blanks do not count.

type iniSpec struct{ section string }

func (s iniSpec) units(data []byte) ([]unit, bool) {
	var us []unit
	open := -1
	key := "[" + s.section + "]"
	for _, l := range ini.Lines(data) {
		if name, ok := ini.Header(l.Text); ok {
			open = -1
			if name == s.section || strings.TrimFunc(name, ini.IsSpace) == s.section {
				head, _, _ := strings.Cut(l.Text, "#")
				head, _, _ = strings.Cut(head, ";")
				us = append(us, unit{key: key, names: []string{key}, start: l.Start, end: l.End, norm: ini.RStrip(head)})
				open = len(us) - 1
			}
			continue
		}
		if open < 0 {
			continue
		}
		u := &us[open]
		u.end = l.End
		if !ini.IsComment(l.Text) {
			u.norm += "\n" + ini.RStrip(l.Text)
		}
	}
	return us, true
}

func (s iniSpec) anchor(worker []byte, wus []unit, b unit) int { return len(worker) }

func (s iniSpec) consistent(base, judged []byte) bool { return true }
