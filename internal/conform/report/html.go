package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// WriteHTML writes the matrix as one self-contained page: inline CSS, no
// script, no external asset. Each violated cell and composition row links
// to its counterexample's anchor on the page, which lists the trace's
// actions and links the ITF file (traces/MODEL/PROPERTY.itf.json, relative
// to the page, as `matrix --out DIR` writes them). The markup is well-formed
// XML, so tools can read it.
func (res *Results) WriteHTML(w io.Writer) error {
	doc, err := res.JSONDocument()
	if err != nil {
		return err
	}
	type row struct {
		Protocol string
		Cells    []Cell
	}
	var rows []row
	i := 0
	for _, proto := range catalog.Protocols {
		r := row{Protocol: proto}
		for range ir.Principles {
			r.Cells = append(r.Cells, doc.Cells[i])
			i++
		}
		rows = append(rows, r)
	}
	var columns []Cell
	for _, c := range doc.Cells {
		if c.Implementation != nil || c.BehindWarden != nil {
			columns = append(columns, c)
		}
	}
	type cx struct {
		Finding
		Steps []string
	}
	var cxs []cx
	for _, f := range res.Findings {
		if f.Trace == nil {
			continue
		}
		c := cx{Finding: f}
		cyc := f.Trace.Cycle
		for i, s := range f.Trace.Steps[1:] {
			t := f.Trace.Model.Transitions[s.Action]
			step := t.ID + " (" + string(t.Kind) + ")"
			if cyc != nil && i+1 > cyc.Start {
				step += " ⟲ cycle"
			}
			c.Steps = append(c.Steps, step)
		}
		if cyc != nil {
			// A lasso: the step that closes the cycle, then it repeats.
			closing := "stutter (nothing is enabled)"
			if cyc.Action >= 0 {
				t := f.Trace.Model.Transitions[cyc.Action]
				closing = t.ID + " (" + string(t.Kind) + ")"
			}
			c.Steps = append(c.Steps, fmt.Sprintf("%s ⟲ cycle, back to the state after step %d; it repeats forever", closing, cyc.Start))
		}
		cxs = append(cxs, c)
	}
	data := struct {
		Doc          *Document
		Principles   []string
		Rows         []row
		Columns      []Cell
		Compositions []Finding
		CXs          []cx
		TriageLine   string
		BehindLine   string
		PartialLine  string
	}{doc, ir.Principles, rows, columns, doc.Compositions, cxs, triageLine(doc.Summary.ByTriage), res.BehindLine(), res.partialLine()}
	return htmlPage.Execute(w, data)
}

// anchor is the id of a counterexample's section: cx-MODEL-PROPERTY.
func anchor(counterexample string) string {
	p := strings.TrimSuffix(strings.TrimPrefix(counterexample, "traces/"), ".itf.json")
	return "cx-" + strings.ReplaceAll(p, "/", "-")
}

var htmlPage = template.Must(template.New("matrix").Funcs(template.FuncMap{
	"anchor": anchor,
	"short":  func(s string) string { return shortTriage[s] },
	"cls":    func(s string) string { return shortClass[s] },
	"mark": func(result string) string {
		switch result {
		case "violated":
			return "✗"
		case NotModelled:
			return "—"
		}
		return "✓"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>AgentConform: protocol × principle matrix</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #1b1b1b; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.5em; text-align: center; font-size: 0.9em; }
td.ev { text-align: left; max-width: 40em; }
.t-SPEC-FAIL { background: #fde2c8; }
.t-AMBIGUITY-FAIL { background: #fff3b0; }
.t-BOTH-FAIL { background: #f8b4b4; }
.t-IMPL-FAIL { background: #f4a3c6; }
.t-MODEL-FAIL { background: #d8d8f0; }
.t-PASS { background: #cdeccd; }
a { color: #0b4f9c; }
code { font-size: 0.9em; }
section.cx { border-top: 1px solid #ddd; padding-top: 0.5em; }
</style>
</head>
<body>
<h1>AgentConform: protocol × principle matrix</h1>
<p id="summary">{{.Doc.Summary.Cells}} cells: {{.Doc.Summary.Violated}} violated, {{.Doc.Summary.Holds}} hold. Triage: {{.TriageLine}}. {{.BehindLine}} Replay: {{.Doc.Replay}}.</p>
{{with .PartialLine}}<p id="coverage" class="partial">{{.}}</p>
{{end}}
<p>Each cell: ✗ violated or ✓ holds, the triage label and the taxonomy class (SM spec-mandated, SR spec-recommended, AH AASM-hardening, AC APS-completeness); † the violation needs an Adversary action. A violated cell links to its counterexample.</p>
<table id="matrix">
<thead><tr><th>protocol</th>{{range .Principles}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr id="row-{{.Protocol}}"><th>{{.Protocol}}</th>{{range .Cells}}<td class="cell t-{{.Triage}}" title="{{.Triage}} · {{.Class}}">{{if .Counterexample}}<a href="#{{anchor .Counterexample}}">{{mark .Result}}{{if .Adversary}}†{{end}}</a>{{else}}{{mark .Result}}{{if eq .Coverage "partial"}}*{{end}}{{end}} {{short .Triage}} {{cls .Class}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .Columns}}<h2 id="implementation-heading">Implementation and behind warden</h2>
<table id="implementation">
<thead><tr><th>protocol</th><th>principle</th><th>model</th><th>model triage</th><th>implementation</th><th>triage</th><th>behind the gateway (replay)</th><th>triage</th><th>evidence</th></tr></thead>
<tbody>
{{range .Columns}}<tr><td>{{.Protocol}}</td><td>{{.Principle}}</td><td>{{if .Counterexample}}<a href="#{{anchor .Counterexample}}">{{.Result}}</a>{{else}}{{.Result}}{{end}}</td><td class="t-{{.ModelTriage}}">{{.ModelTriage}}</td>{{with .Implementation}}<td>{{.Outcome}}</td><td class="t-{{.Triage}}">{{.Triage}}</td>{{else}}<td>—</td><td>—</td>{{end}}{{with .BehindWarden}}<td>{{.Outcome}}</td><td class="t-{{.Triage}}">{{.Triage}}</td>{{else}}<td>—</td><td>—</td>{{end}}<td class="ev">{{with .Implementation}}{{.Evidence}}{{end}}{{with .BehindWarden}} — behind warden: {{.Evidence}}{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}<h2 id="compositions-heading">Composition safety ({{.Doc.Summary.CSInvariants}} invariants, {{.Doc.Summary.CSViolated}} violated)</h2>
<table id="compositions">
<thead><tr><th>model</th><th>protocols</th><th>invariant</th><th>result</th><th>triage</th><th>class</th><th>length</th><th>behind warden (modelled)</th></tr></thead>
<tbody>
{{range .Compositions}}<tr class="t-{{.Triage}}"><td>{{.Model}}</td><td>{{range $i, $p := .Protocols}}{{if $i}} + {{end}}{{$p}}{{end}}</td><td>{{if .Counterexample}}<a href="#{{anchor .Counterexample}}">{{.Property}}</a>{{else}}{{.Property}}{{end}}</td><td>{{.Result}}{{if eq .Coverage "partial"}} (partial){{end}}</td><td>{{.Triage}}</td><td>{{.Class}}</td><td>{{if .TraceLen}}{{.TraceLen}}{{if .Adversary}} †{{end}}{{else}}—{{end}}</td><td>{{.WardenResult}}</td></tr>
{{end}}</tbody>
</table>
<h2 id="counterexamples">Counterexamples</h2>
{{range .CXs}}<section class="cx" id="{{anchor .Counterexample}}">
<h3>{{.Model}} / {{.Property}} ({{.Principle}}, {{.Class}}, {{.Triage}})</h3>
<p>{{.TraceLen}} steps{{if .Adversary}}, needs an Adversary action{{end}}. ITF trace: <a href="{{.Counterexample}}"><code>{{.Counterexample}}</code></a></p>
<ol>{{range .Steps}}<li>{{.}}</li>{{end}}</ol>
</section>
{{end}}</body>
</html>
`))
