package components

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// svgShape is what the tests read of a chart: its bars and their rects.
type svgShape struct {
	XMLName xml.Name `xml:"svg"`
	Title   string   `xml:"title"`
	Bars    []struct {
		Class string `xml:"class,attr"`
		Key   string `xml:"data-key,attr"`
		Title string `xml:"title"`
		Rects []struct {
			Class string `xml:"class,attr"`
			Value int    `xml:"data-value,attr"`
		} `xml:"rect"`
	} `xml:"g"`
}

// parseSVG parses markup with encoding/xml, failing on anything not well-formed.
func parseSVG(t *testing.T, markup string) svgShape {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(markup))
	d.Strict = true
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, markup)
		}
	}
	var s svgShape
	if err := xml.Unmarshal([]byte(markup), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBarChartIsXMLWithOneBarPerEntry(t *testing.T) {
	c := BarChart{TestID: "t", Title: `Tasks <done> & "left"`, LabelEvery: 5}
	for i := range 30 {
		c.Bars = append(c.Bars, ChartBar{Label: "d" + string(rune('a'+i%26)), Key: "k" + string(rune('a'+i%26)),
			Segments: []ChartSegment{{Kind: "verified", Value: i % 3}, {Kind: "blocked", Value: i % 2}}})
	}
	c.Bars[3].Label = `</text><script>alert(1)</script>`
	var buf bytes.Buffer
	if err := Chart(c).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	s := parseSVG(t, buf.String())
	if len(s.Bars) != 30 {
		t.Fatalf("%d bars, want 30", len(s.Bars))
	}
	if s.Title != `Tasks <done> & "left"` {
		t.Fatalf("title %q", s.Title)
	}
	if strings.Contains(buf.String(), "<script>") {
		t.Fatal("a label was not escaped")
	}
	b := s.Bars[5] // 5 % 3 = 2 verified, 5 % 2 = 1 blocked
	if b.Class != "bar" || len(b.Rects) != 2 || b.Rects[0].Value != 2 || b.Rects[1].Class != "blocked" || !strings.Contains(b.Title, "2 verified, 1 blocked") {
		t.Fatalf("bar 5: %+v", b)
	}
	if len(s.Bars[0].Rects) != 0 {
		t.Fatalf("a bar of zeros drew %d rects", len(s.Bars[0].Rects))
	}
}

func TestEmptyChartIsXML(t *testing.T) {
	s := parseSVG(t, BarChart{TestID: "e", Title: "nothing"}.SVG())
	if len(s.Bars) != 0 {
		t.Fatal("bars from nothing")
	}
}
