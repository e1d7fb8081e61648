package eval

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
)

// A plot is one bar chart of the HTML report: a bar per label, its value,
// and the text drawn on it.
type plot struct {
	Name, Title, Unit string
	Bars              []bar
}

type bar struct {
	Label string
	Value float64
	Text  string
}

// Plot geometry, in CSS pixels.
const (
	plotHeight = 180
	barWidth   = 28
	barGap     = 10
	plotLeft   = 40
	plotBottom = 60
)

// svgBar is a bar laid out in its plot.
type svgBar struct {
	bar
	X, Y, W, H float64
	LabelX     float64
}

type svgPlot struct {
	plot
	Width, Height float64
	Bars          []svgBar
	Max           string
}

func layout(p plot) svgPlot {
	peak := 0.0
	for _, b := range p.Bars {
		peak = max(peak, b.Value)
	}
	out := svgPlot{plot: p, Height: plotHeight + plotBottom + 20, Max: strconv.FormatFloat(peak, 'f', -1, 64)}
	out.Width = max(plotLeft+float64(len(p.Bars))*(barWidth+barGap)+barGap, 240)
	for i, b := range p.Bars {
		h := 0.0
		if peak > 0 {
			h = b.Value / peak * plotHeight
		}
		x := plotLeft + barGap + float64(i)*(barWidth+barGap)
		out.Bars = append(out.Bars, svgBar{bar: b, X: x, Y: 20 + plotHeight - h, W: barWidth, H: h, LabelX: x + barWidth/2})
	}
	return out
}

// plots are the report's charts: the verified rate per ecosystem, time per
// repository, the failure classes that stopped the unverified, and replays
// per repository.
func (r *Report) plots() []svgPlot {
	type tally struct{ verified, total int }
	eco := map[string]*tally{}
	classes := map[string]int{}
	var times, replays, ratios []bar
	for i, row := range r.Rows {
		e := cmp.Or(row.Ecosystem, "unknown")
		if eco[e] == nil {
			eco[e] = &tally{}
		}
		eco[e].total++
		label := fmt.Sprintf("%d", i+1)
		if row.Verified {
			eco[e].verified++
		} else {
			classes[cmp.Or(row.Class, map[bool]string{true: "error", false: "unknown"}[row.Error != ""])]++
		}
		times = append(times, bar{Label: label, Value: roundTo(row.Seconds, 1), Text: strconv.FormatFloat(roundTo(row.Seconds, 1), 'f', -1, 64)})
		replays = append(replays, bar{Label: label, Value: float64(row.Attempts), Text: strconv.Itoa(row.Attempts)})
		if row.BareSeconds > 0 {
			q := roundTo(row.Seconds/row.BareSeconds, 2)
			ratios = append(ratios, bar{Label: label, Value: q, Text: strconv.FormatFloat(q, 'f', -1, 64) + "×"})
		}
	}
	var rates []bar
	for _, e := range slices.Sorted(maps.Keys(eco)) {
		t := eco[e]
		rates = append(rates, bar{Label: e, Value: roundTo(100*float64(t.verified)/float64(t.total), 1), Text: fmt.Sprintf("%d/%d", t.verified, t.total)})
	}
	var fails []bar
	for _, c := range slices.Sorted(maps.Keys(classes)) {
		fails = append(fails, bar{Label: c, Value: float64(classes[c]), Text: strconv.Itoa(classes[c])})
	}
	var out []svgPlot
	for _, p := range []plot{
		{Name: "ecosystems", Title: "verified per ecosystem", Unit: "%", Bars: rates},
		{Name: "seconds", Title: "wall time per repository", Unit: "s", Bars: times},
		{Name: "classes", Title: "what stopped the unverified", Unit: "repositories", Bars: fails},
		{Name: "replays", Title: "replays per repository", Unit: "replays", Bars: replays},
		{Name: "ratio", Title: "synth time over the bare cold time of its commands", Unit: "×", Bars: ratios},
	} {
		out = append(out, layout(p))
	}
	return out
}

func roundTo(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>bootstrap eval: {{.Verified}} of {{.Total}} verified</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; }
.plots { display: flex; flex-wrap: wrap; gap: 2em; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: .3em; }
svg text { font-size: 11px; fill: #333; }
rect.bar { fill: #3b7dd8; }
line.axis { stroke: #999; }
table { border-collapse: collapse; margin-top: 2em; }
td, th { border: 1px solid #ccc; padding: .2em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; }
</style>
</head>
<body>
<h1>bootstrap eval: <span id="verified">{{.Verified}}</span> of <span id="total">{{.Total}}</span> verified</h1>
{{if .MedianRatio}}<p>median synth time over bare cold time: <span id="median-ratio">{{.MedianRatio}}</span>×</p>{{end}}
<div class="plots">
{{range .Plots}}<figure>
<figcaption>{{.Title}} ({{.Unit}})</figcaption>
<svg class="plot" data-plot="{{.Name}}" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<line class="axis" x1="40" y1="20" x2="40" y2="200"></line>
<line class="axis" x1="40" y1="200" x2="{{.Width}}" y2="200"></line>
<text x="2" y="24">{{.Max}}</text>
{{range .Bars}}<rect class="bar" data-label="{{.Label}}" data-value="{{.Value}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Label}}: {{.Text}}</title></rect>
<text x="{{.LabelX}}" y="214" text-anchor="middle">{{.Label}}</text>
<text x="{{.LabelX}}" y="{{.Y}}" dy="-3" text-anchor="middle">{{.Text}}</text>
{{end}}</svg>
</figure>
{{end}}</div>
<table>
<thead><tr><th>#</th><th>repository</th><th>ecosystem</th><th>verified</th><th>replays</th><th>seconds</th><th>bare seconds</th><th>engine</th><th>stopped by</th><th>repairs</th><th>diagnosis</th></tr></thead>
<tbody>
{{range $i, $r := .Rows}}<tr><td class="n">{{inc $i}}</td><td>{{$r.Source}}</td><td>{{$r.Ecosystem}}</td><td>{{$r.Verified}}</td><td class="n">{{$r.Attempts}}</td><td class="n">{{printf "%.0f" $r.Seconds}}</td><td class="n">{{if $r.BareSeconds}}{{printf "%.0f" $r.BareSeconds}}{{end}}</td><td>{{$r.Engine}}</td><td>{{$r.Class}}</td><td>{{range $j, $x := $r.Repairs}}{{if $j}}, {{end}}{{$x}}{{end}}</td><td>{{if $r.Error}}{{$r.Error}}{{else}}{{$r.Diagnosis}}{{end}}</td></tr>
{{end}}</tbody>
</table>
</body>
</html>
`))

// WriteHTML writes the report as one self-contained page (no external
// asset, no script): the plots as inline SVG, then the table. The same
// report gives the same bytes.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, struct {
		*Report
		Plots []svgPlot
	}{r, r.plots()})
}
