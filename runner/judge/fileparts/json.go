package fileparts

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/countersign/countersign/models/formats/glob"
	"github.com/countersign/countersign/models/formats/pkgjson"
)

// JSON parts (package.json#scripts, file.json#.member).
//
// The worker's file is edited in place, member by member, so its key order,
// indentation and every member outside the protected ones stay as written. Members
// are compared by decoded value (escapes and spacing inside a value do not count as
// a change); a changed value is replaced by the base's bytes. Duplicate keys are
// read as npm reads them (JSON.parse: the last one wins) and then removed: only the
// last "scripts" member survives, and a protected script appears once. The object
// and its members are read by models/formats/pkgjson (Scan, ScanObject,
// Effective), the one JSON object reader; this file only edits.

type jsonSpec struct {
	scripts bool     // protect the scripts named and what they run
	names   []string // scripts the contract runs
	member  string   // else: protect this top-level member
}

// jsonEqual compares two JSON values by what they decode to.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// piece is one member of an object being rebuilt: whitespace before it, the
// member itself ("key": value), whitespace between it and its comma.
type piece struct{ lead, body, gap []byte }

// rebuildObject writes an object from pieces, closing it with tail (the whitespace
// before the original '}').
func rebuildObject(pieces []piece, tail []byte) []byte {
	out := []byte{'{'}
	for i, p := range pieces {
		out = append(out, p.lead...)
		out = append(out, p.body...)
		if i < len(pieces)-1 {
			out = append(out, p.gap...)
			out = append(out, ',')
		}
	}
	out = append(out, tail...)
	return append(out, '}')
}

// guessLead is the whitespace to put before a member inserted into obj: the last
// member's, or for an empty object an indentation one step in from its closing.
func guessLead(doc []byte, obj pkgjson.Object) []byte {
	if n := len(obj.Members); n > 0 {
		m := obj.Members[n-1]
		return doc[m.LeadStart:m.KeyStart]
	}
	tail := doc[obj.Open+1 : obj.Close]
	if bytes.IndexByte(tail, '\n') < 0 {
		return nil
	}
	return append(append([]byte{}, tail...), ' ', ' ')
}

// protectMembers returns obj (an object in doc) with the members isProt selects
// made exactly base's (from bdoc: bm by name, border their order): an equal member
// is kept as written, a differing one gets base's value, an extra one or an
// earlier duplicate is removed, a missing one is appended. changed gets
// prefix+name for each member touched; out is nil when nothing changes.
func protectMembers(doc []byte, obj pkgjson.Object, isProt func(string) bool, bdoc []byte, bm map[string]pkgjson.Member, border []string, prefix string) (out []byte, changed []string) {
	eff, _ := obj.Effective()
	var pieces []piece
	touched := false
	for _, m := range obj.Members {
		p := piece{lead: doc[m.LeadStart:m.KeyStart], body: doc[m.KeyStart:m.ValEnd], gap: doc[m.ValEnd:m.GapEnd]}
		if !isProt(m.Name) {
			pieces = append(pieces, p)
			continue
		}
		b, inBase := bm[m.Name]
		if e := eff[m.Name]; e.KeyStart != m.KeyStart || !inBase {
			touched = true
			changed = append(changed, prefix+m.Name)
			continue
		}
		if !jsonEqual(doc[m.ValStart:m.ValEnd], bdoc[b.ValStart:b.ValEnd]) {
			touched = true
			changed = append(changed, prefix+m.Name)
			body := append([]byte{}, doc[m.KeyStart:m.ValStart]...)
			p.body = append(body, bdoc[b.ValStart:b.ValEnd]...)
		}
		pieces = append(pieces, p)
	}
	lead := guessLead(doc, obj)
	for _, name := range border {
		if !isProt(name) {
			continue
		}
		if _, ok := eff[name]; ok {
			continue
		}
		b := bm[name]
		touched = true
		changed = append(changed, prefix+name)
		pieces = append(pieces, piece{lead: lead, body: bdoc[b.KeyStart:b.ValEnd]})
	}
	if !touched {
		return nil, nil
	}
	if len(obj.Members) > 0 && len(pieces) > 0 {
		// The first member keeps the first member's indentation ("{" + lead).
		first := obj.Members[0]
		pieces[0].lead = doc[first.LeadStart:first.KeyStart]
	}
	tail := doc[obj.Open+1 : obj.Close]
	if n := len(obj.Members); n > 0 {
		tail = doc[obj.Members[n-1].ValEnd:obj.Close]
	}
	return rebuildObject(pieces, tail), changed
}

// newObject builds an object of base members for a file that has none, indented
// one step in from lead (the whitespace before the member that will hold it).
func newObject(bdoc []byte, bm map[string]pkgjson.Member, names []string, lead []byte) []byte {
	indent := []byte(nil)
	if i := bytes.LastIndexByte(lead, '\n'); i >= 0 {
		indent = lead[i:]
	}
	step := indent
	if len(indent) > 1 {
		step = indent[1:] // one level of the file's indentation
	}
	var pieces []piece
	for _, n := range names {
		b := bm[n]
		var l []byte
		if len(indent) > 0 {
			l = append(append([]byte{}, indent...), step...)
		}
		pieces = append(pieces, piece{lead: l, body: bdoc[b.KeyStart:b.ValEnd]})
	}
	return rebuildObject(pieces, indent)
}

func restoreJSON(base, worker []byte, spec jsonSpec) ([]byte, []string, error) {
	if base == nil && worker == nil {
		return nil, nil, nil
	}
	bj, err := readBaseJSON(base, spec)
	if err != nil {
		return nil, nil, err
	}
	if worker == nil {
		if len(bj.prot) == 0 {
			return nil, nil, nil
		}
		var names []string
		for _, n := range bj.prot {
			names = append(names, bj.prefix+n)
		}
		return clone(base), sortedNames(names, WholeFile), nil
	}
	if bytes.Equal(base, worker) && base != nil {
		return clone(worker), nil, nil
	}
	wobj, ok := pkgjson.Scan(worker)
	if !ok {
		return wholeBase(base, worker, nil)
	}
	if !spec.scripts {
		out, changed := protectMembers(worker, wobj, bj.isProt, bj.doc, bj.bm, bj.order, "")
		if out == nil {
			return clone(worker), nil, nil
		}
		return splicedJSON(worker, wobj.Open, wobj.Close+1, out), sortedNames(changed), nil
	}
	return restoreScripts(base, worker, wobj, bj)
}

// baseJSON is what restoreJSON protects, read from the base: the protected
// object's members (bm by name, order as they stand; their offsets are into doc),
// which of them are protected, those in order, and the prefix of their names.
type baseJSON struct {
	doc    []byte
	bm     map[string]pkgjson.Member
	order  []string
	isProt func(string) bool
	prot   []string
	prefix string
}

func readBaseJSON(base []byte, spec jsonSpec) (baseJSON, error) {
	var bj baseJSON
	if base != nil {
		bobj, ok := pkgjson.Scan(base)
		if !ok {
			return bj, errors.New("fileparts: the base file is not a JSON object")
		}
		bj.doc = base
		top, order := bobj.Effective()
		if !spec.scripts {
			bj.bm, bj.order = top, order
		} else if s, ok := top["scripts"]; ok && base[s.ValStart] == '{' {
			sobj, ok := pkgjson.ScanObject(base, s.ValStart)
			if !ok {
				return bj, errors.New("fileparts: the base file is not a JSON object")
			}
			bj.bm, bj.order = sobj.Effective()
		}
	}
	if spec.scripts {
		bj.isProt, bj.prefix = scriptSet(spec.names, bj.doc, bj.bm), "scripts."
	} else {
		bj.isProt = func(n string) bool { return n == spec.member }
	}
	for _, n := range bj.order {
		if bj.isProt(n) {
			bj.prot = append(bj.prot, n)
		}
	}
	return bj, nil
}

// restoreScripts protects the scripts of worker's package.json (wobj): earlier
// duplicates of "scripts" dropped, then the protected scripts made the base's.
func restoreScripts(base, worker []byte, wobj pkgjson.Object, bj baseJSON) ([]byte, []string, error) {
	var changed []string
	doc := worker
	weff, _ := wobj.Effective()
	s, has := weff["scripts"]
	nScripts := 0
	for _, m := range wobj.Members {
		if m.Name == "scripts" {
			nScripts++
		}
	}
	if nScripts > 1 {
		onlyLast := func(n string) bool { return n == "scripts" }
		keep := map[string]pkgjson.Member{"scripts": s}
		out, _ := protectMembers(worker, wobj, onlyLast, worker, keep, []string{"scripts"}, "")
		doc = splicedJSON(worker, wobj.Open, wobj.Close+1, out)
		changed = append(changed, "scripts")
		var ok bool
		if wobj, ok = pkgjson.Scan(doc); !ok {
			return wholeBase(base, worker, nil)
		}
		weff, _ = wobj.Effective()
		s, has = weff["scripts"]
	}
	switch {
	case has && doc[s.ValStart] == '{':
		sobj, ok := pkgjson.ScanObject(doc, s.ValStart)
		if !ok {
			return wholeBase(base, worker, nil)
		}
		out, ch := protectMembers(doc, sobj, bj.isProt, bj.doc, bj.bm, bj.order, bj.prefix)
		if out != nil {
			doc = splicedJSON(doc, s.ValStart, s.ValEnd, out)
			changed = append(changed, ch...)
		}
	case has && len(bj.prot) > 0:
		// "scripts" is not an object: replace it by the base's protected scripts.
		lead := doc[s.LeadStart:s.KeyStart]
		doc = splicedJSON(doc, s.ValStart, s.ValEnd, newObject(bj.doc, bj.bm, bj.prot, lead))
		changed = append(changed, "scripts")
		for _, n := range bj.prot {
			changed = append(changed, bj.prefix+n)
		}
	case !has && len(bj.prot) > 0:
		doc = appendScripts(doc, wobj, bj)
		for _, n := range bj.prot {
			changed = append(changed, bj.prefix+n)
		}
	}
	if len(changed) == 0 {
		return clone(worker), nil, nil
	}
	return doc, sortedNames(changed), nil
}

// appendScripts adds a "scripts" member holding the base's protected scripts to
// the object wobj of doc, which has none.
func appendScripts(doc []byte, wobj pkgjson.Object, bj baseJSON) []byte {
	lead := guessLead(doc, wobj)
	body := append([]byte(`"scripts": `), newObject(bj.doc, bj.bm, bj.prot, lead)...)
	var pieces []piece
	for _, m := range wobj.Members {
		pieces = append(pieces, piece{lead: doc[m.LeadStart:m.KeyStart], body: doc[m.KeyStart:m.ValEnd], gap: doc[m.ValEnd:m.GapEnd]})
	}
	pieces = append(pieces, piece{lead: lead, body: body})
	tail := doc[wobj.Open+1 : wobj.Close]
	if n := len(wobj.Members); n > 0 {
		tail = doc[wobj.Members[n-1].ValEnd:wobj.Close]
	}
	return splicedJSON(doc, wobj.Open, wobj.Close+1, rebuildObject(pieces, tail))
}

func splicedJSON(doc []byte, start, end int, mid []byte) []byte {
	out := make([]byte, 0, len(doc)-(end-start)+len(mid))
	out = append(out, doc[:start]...)
	out = append(out, mid...)
	return append(out, doc[end:]...)
}

// scriptSet returns which script names are protected: the names given (globs with
// '*' allowed, as npm-run-all takes them), their pre/post hooks, and transitively
// what the base's versions of those scripts run.
func scriptSet(names []string, bdoc []byte, bm map[string]pkgjson.Member) func(string) bool {
	exact := map[string]bool{}
	var globs []string
	var queue []string
	add := func(n string) {
		if n == "" {
			return
		}
		if strings.Contains(n, "*") {
			for _, g := range globs {
				if g == n {
					return
				}
			}
			globs = append(globs, n)
			for name := range bm {
				if glob.MatchTask(n, name) {
					queue = append(queue, name)
				}
			}
			return
		}
		if !exact[n] {
			exact[n] = true
			queue = append(queue, n)
		}
	}
	for _, n := range names {
		add(n)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, h := range []string{n, "pre" + n, "post" + n} {
			if !exact[h] {
				exact[h] = true
			}
			m, ok := bm[h]
			if !ok {
				continue
			}
			var body string
			if json.Unmarshal(bdoc[m.ValStart:m.ValEnd], &body) != nil {
				continue
			}
			for _, r := range ScriptsRun([]string{body}) {
				if !exact[r] {
					add(r)
				}
			}
		}
	}
	return func(n string) bool {
		if exact[n] {
			return true
		}
		for _, g := range globs {
			if glob.MatchTask(g, n) ||
				(strings.HasPrefix(n, "pre") && glob.MatchTask(g, n[3:])) ||
				(strings.HasPrefix(n, "post") && glob.MatchTask(g, n[4:])) {
				return true
			}
		}
		return false
	}
}
