package components

import (
	"context"
	"html"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// Chart colours, given as SVG presentation attributes (the Content-Security-Policy
// allows no inline styles), by segment kind.
var chartFills = map[string]string{
	"verified": "#2e7d32",
	"blocked":  "#c62828",
	"left":     "#1565c0",
	"attempts": "#5e35b1",
}

// ChartSegment is one stacked part of a bar: a value of a kind (verified, blocked,
// left, count; each has its colour).
type ChartSegment struct {
	Kind  string
	Value int
}

// ChartBar is one bar: its axis label (may be ""), its key (data-key, e.g. the day)
// and its segments, stacked bottom up. Its tooltip (an SVG title) says every value.
type ChartBar struct {
	Label    string
	Key      string
	Segments []ChartSegment
}

// BarChart is a server-rendered SVG bar chart: readable without JavaScript, each bar
// a <g class="bar"> with a <title> naming its values, and a legend of the kinds.
type BarChart struct {
	TestID string
	// Title names the chart for assistive technology (the SVG's <title>) and
	// Summary describes it (<desc>).
	Title, Summary string
	Bars           []ChartBar
	// LabelEvery labels every n-th bar counted back from the last (which is always
	// labelled, and never crowded by its neighbour); 0 or 1 labels each.
	LabelEvery int
}

// Chart geometry, in the viewBox's units.
const (
	chartW      = 720
	chartH      = 220
	chartLeft   = 40
	chartRight  = 10
	chartTop    = 28
	chartBottom = 40
)

// SVG is the chart's markup: well-formed XML in which every text and attribute value
// is escaped.
func (c BarChart) SVG() string {
	var b strings.Builder
	esc := html.EscapeString
	num := strconv.Itoa
	ftoa := func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
	peak := 0
	var kinds []string
	for _, bar := range c.Bars {
		total := 0
		for _, s := range bar.Segments {
			total += s.Value
			if !slices.Contains(kinds, s.Kind) {
				kinds = append(kinds, s.Kind)
			}
		}
		peak = max(peak, total)
	}
	scale := max(peak, 1)
	plotW, plotH := float64(chartW-chartLeft-chartRight), float64(chartH-chartTop-chartBottom)
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="100%" viewBox="0 0 ` + num(chartW) + ` ` + num(chartH) +
		`" data-testid="` + esc(c.TestID) + `" data-bars="` + num(len(c.Bars)) + `" aria-labelledby="` + esc(c.TestID) + `-title">`)
	b.WriteString(`<title id="` + esc(c.TestID) + `-title">` + esc(c.Title) + `</title>`)
	if c.Summary != "" {
		b.WriteString(`<desc>` + esc(c.Summary) + `</desc>`)
	}
	base := float64(chartTop) + plotH
	// Axes: the baseline, and the peak's value at the top left.
	b.WriteString(`<line x1="` + num(chartLeft) + `" y1="` + ftoa(base) + `" x2="` + num(chartW-chartRight) + `" y2="` + ftoa(base) + `" stroke="#9e9e9e" stroke-width="1"/>`)
	b.WriteString(`<text x="` + num(chartLeft-6) + `" y="` + num(chartTop+4) + `" text-anchor="end" font-size="11" fill="#616161">` + num(peak) + `</text>`)
	b.WriteString(`<text x="` + num(chartLeft-6) + `" y="` + ftoa(base) + `" text-anchor="end" font-size="11" fill="#616161">0</text>`)
	every := max(c.LabelEvery, 1)
	slot := plotW / float64(max(len(c.Bars), 1))
	width := slot * 0.7
	for i, bar := range c.Bars {
		x := float64(chartLeft) + slot*float64(i) + (slot-width)/2
		var tip []string
		for _, s := range bar.Segments {
			tip = append(tip, num(s.Value)+" "+s.Kind)
		}
		name := bar.Key
		if name == "" {
			name = bar.Label
		}
		b.WriteString(`<g class="bar" data-key="` + esc(bar.Key) + `"><title>` + esc(name+": "+strings.Join(tip, ", ")) + `</title>`)
		y := base
		for _, s := range bar.Segments {
			if s.Value <= 0 {
				continue
			}
			h := plotH * float64(s.Value) / float64(scale)
			y -= h
			b.WriteString(`<rect class="` + esc(s.Kind) + `" x="` + ftoa(x) + `" y="` + ftoa(y) + `" width="` + ftoa(width) + `" height="` + ftoa(h) +
				`" fill="` + fill(s.Kind) + `" data-value="` + num(s.Value) + `"/>`)
		}
		b.WriteString(`</g>`)
		if bar.Label != "" && (len(c.Bars)-1-i)%every == 0 {
			b.WriteString(`<text x="` + ftoa(x+width/2) + `" y="` + ftoa(base+16) + `" text-anchor="middle" font-size="11" fill="#616161">` + esc(bar.Label) + `</text>`)
		}
	}
	// The legend, top right.
	lx := float64(chartW - chartRight)
	for i := len(kinds) - 1; i >= 0; i-- {
		k := kinds[i]
		lx -= float64(len(k))*7 + 24
		b.WriteString(`<rect x="` + ftoa(lx) + `" y="6" width="10" height="10" fill="` + fill(k) + `"/>`)
		b.WriteString(`<text x="` + ftoa(lx+14) + `" y="15" font-size="11" fill="#424242">` + esc(k) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Chart renders c as inline SVG (see BarChart.SVG).
func Chart(c BarChart) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, c.SVG())
		return err
	})
}

func fill(kind string) string {
	if f, ok := chartFills[kind]; ok {
		return f
	}
	return "#757575"
}
