package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/replay"
)

// Document is the JSON form of the matrix.
type Document struct {
	Version      int       `json:"version"`
	Source       string    `json:"source"`
	Replay       string    `json:"replay"`
	Cells        []Cell    `json:"cells"`
	Compositions []Finding `json:"compositions"`
	Summary      Summary   `json:"summary"`
	// Coverage is "partial" when any finding's is (a hashcompact or
	// bitstate run in which something held): then a "holds" in this
	// document is not a proof. Otherwise "complete".
	Coverage string `json:"coverage"`
	// WardenResults says where warden_result comes from: the model behind
	// the gateway (its warden: blocks), never a run behind the real
	// gateway; that is the behind_warden column of --against.
	WardenResults string `json:"warden_results"`
}

// WardenModelled is Document.WardenResults: what every warden_result is.
const WardenModelled = "modelled: the model's variant behind the gateway (NAME+warden, its warden: blocks), " +
	"not a run behind the gateway; replay behind the real gateway is the behind_warden column (conform matrix --against)"

// Summary counts the cells.
type Summary struct {
	Cells        int            `json:"cells"`
	Violated     int            `json:"violated"`
	Holds        int            `json:"holds"`
	PartialHolds int            `json:"partial_holds"` // of Holds, those of partial coverage
	ByTriage     map[string]int `json:"by_triage"`
	CSInvariants int            `json:"cs_invariants"`
	CSViolated   int            `json:"cs_violated"`
	// ModelledWardenViolations counts the properties still violated in
	// the models behind the gateway (NAME+warden): a model check, not a
	// run. BehindWarden is the result of a run (BehindLine).
	ModelledWardenViolations int    `json:"modelled_warden_violations"`
	BehindWarden             string `json:"behind_warden"`
}

// JSONDocument assembles the JSON form.
func (res *Results) JSONDocument() (*Document, error) {
	cells, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	doc := &Document{Version: 1, Source: "model check of the built-in models (AgentRFC §6)", Replay: res.replayLine(),
		Cells: cells, Compositions: res.Compositions(), Summary: Summary{ByTriage: map[string]int{}, BehindWarden: res.BehindLine()},
		WardenResults: WardenModelled, Coverage: CoverageComplete}
	for _, c := range cells {
		if c.Result == NotModelled {
			continue
		}
		doc.Summary.Cells++
		doc.Summary.ByTriage[c.Triage]++
		switch c.Result {
		case "violated":
			doc.Summary.Violated++
		case "holds":
			doc.Summary.Holds++
			if c.Coverage == CoveragePartial {
				doc.Summary.PartialHolds++
			}
		}
	}
	for _, f := range res.Findings {
		if f.Principle == "CS" {
			doc.Summary.CSInvariants++
			if f.Result == "violated" {
				doc.Summary.CSViolated++
			}
		}
		if f.WardenResult != "holds" {
			doc.Summary.ModelledWardenViolations++
		}
		if f.Coverage == CoveragePartial {
			doc.Coverage = CoveragePartial
		}
	}
	return doc, nil
}

// WriteJSON writes the JSON form, indented.
func (res *Results) WriteJSON(w io.Writer) error {
	doc, err := res.JSONDocument()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

var shortTriage = map[string]string{SpecFail: "SPEC", AmbiguityFail: "AMBIG", Pass: "PASS", ImplFail: "IMPL",
	BothFail: "BOTH", ModelFail: "MODEL"}

var shortClass = map[string]string{"SPEC-MANDATED": "SM", "SPEC-RECOMMENDED": "SR", "AASM-HARDENING": "AH", "APS-COMPLETENESS": "AC"}

// WriteMarkdown writes the matrix, a legend and the composition table.
func (res *Results) WriteMarkdown(w io.Writer) error {
	doc, err := res.JSONDocument()
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# AgentConform: protocol × principle matrix\n\n")
	if res.impl == nil {
		b.WriteString("Model check only (replay pending). ")
	} else {
		fmt.Fprintf(&b, "Model check with replay against %s. ", doc.Replay)
	}
	b.WriteString("Cell: result, triage label, taxonomy class; † = the violation needs an Adversary action. " +
		"→ warden (modelled) = the result of the model's variant behind the gateway (its warden: blocks), not of a run " +
		"behind the gateway; only `--against` replays through the real gateway.\n\n")
	b.WriteString("| protocol |")
	for _, p := range ir.Principles {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(ir.Principles)))
	b.WriteString("\n")
	i := 0
	for _, proto := range catalog.Protocols {
		fmt.Fprintf(&b, "| %s |", proto)
		for range ir.Principles {
			c := doc.Cells[i]
			i++
			if c.Result == NotModelled {
				b.WriteString(" — |")
				continue
			}
			mark := "✓"
			if c.Result == "violated" {
				mark = "✗"
			} else if c.Coverage == CoveragePartial {
				mark = "✓*"
			}
			adv := ""
			if c.Adversary {
				adv = "†"
			}
			fmt.Fprintf(&b, " %s%s %s %s |", mark, adv, shortTriage[c.Triage], shortClass[c.Class])
		}
		b.WriteString("\n")
	}
	s := doc.Summary
	fmt.Fprintf(&b, "\n%d cells: %d violated, %d hold. Triage: %s. %s\n",
		s.Cells, s.Violated, s.Holds, triageLine(s.ByTriage), res.BehindLine())
	if line := res.partialLine(); line != "" {
		b.WriteString("\n" + line + "\n")
	}
	b.WriteString("\nClasses: SM spec-mandated, SR spec-recommended, AH AASM-hardening, AC APS-completeness. " +
		"Labels: SPEC = SPEC-FAIL, AMBIG = AMBIGUITY-FAIL, BOTH = BOTH-FAIL, IMPL = IMPL-FAIL, MODEL = MODEL-FAIL, PASS.\n")
	writeColumnsMarkdown(&b, doc.Cells)
	fmt.Fprintf(&b, "\n## Composition safety (%d invariants, %d violated)\n\n", s.CSInvariants, s.CSViolated)
	b.WriteString("| model | protocols | invariant | result | triage | class | length | → warden (modelled) |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range doc.Compositions {
		l := "—"
		if f.Result == "violated" {
			l = fmt.Sprint(f.TraceLen)
			if f.Adversary {
				l += " †"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Model, strings.Join(f.Protocols, " + "),
			f.Property, f.resultLabel(), f.Triage, f.Class, l, f.WardenResult)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// partialLine says, under a matrix of partial coverage, that its "holds"
// are not proofs and how likely a miss is; "" when every hold is complete.
func (res *Results) partialLine() string {
	n, note := 0, ""
	for _, f := range res.Findings {
		if f.Coverage == CoveragePartial {
			n++
			note = f.CoverageNote
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("* Partial coverage: %d of the properties hold only as far as the search saw, not as a proof (%s); "+
		"rerun with --store exact for a proof.", n, note)
}

// resultLabel is the result column: a hold of partial coverage reads
// "holds (partial)".
func (f Finding) resultLabel() string {
	if f.Result == "holds" && f.Coverage == CoveragePartial {
		return "holds (partial)"
	}
	return f.Result
}

func triageLine(m map[string]int) string {
	var parts []string
	for _, l := range []string{SpecFail, AmbiguityFail, BothFail, ImplFail, ModelFail, Pass} {
		if m[l] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[l], l))
		}
	}
	return strings.Join(parts, ", ")
}

// BehindLine is the summary's sentence about warden: from a replay behind
// the real gateway (matrix --against), how many probes still reproduced,
// with the configuration the gateway ran; without one, that nothing was
// run. A count of the modelled variants (NAME+warden) is never printed as
// a result behind the gateway: those are the tables' "(modelled)" columns.
func (res *Results) BehindLine() string {
	if res.behind == nil {
		return "Behind warden: not run (--against TARGET replays through the real gateway); " +
			"the \"(modelled)\" columns are the models' variants behind the gateway, not results."
	}
	n := map[replay.Outcome]int{}
	for _, r := range res.behind.Results {
		n[r.Outcome]++
	}
	line := fmt.Sprintf("Replay behind the gateway (a run, %s): %d of %d probes still reproduced; %d reproduced, %d blocked, %d inconclusive, %d unrealisable.",
		res.behind.Target, n[replay.Reproduced], len(res.behind.Results),
		n[replay.Reproduced], n[replay.Blocked], n[replay.Inconclusive], n[replay.Unrealisable])
	if cfg := gatewayNotes(res.behind.Notes); cfg != "" {
		line += " Gateway configuration: " + cfg + "."
	}
	switch g := res.behind.Gateway; {
	case g == nil:
	case g.AuditRecords == 0:
		line += " The gateway's audit log recorded nothing: this run did not go through warden."
	default:
		line += fmt.Sprintf(" The gateway's audit log recorded %d messages of the run", g.AuditRecords)
		if len(g.Rules) > 0 {
			line += " (rules applied: " + strings.Join(g.Rules, ", ") + ")"
		}
		line += "."
	}
	return line
}

// gatewayNotes are the notes of a replay report that state the gateway's
// configuration ("behind warden: ...").
func gatewayNotes(notes []string) string {
	var out []string
	for _, n := range notes {
		if c, ok := strings.CutPrefix(n, "behind warden: "); ok {
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}

// replayLine describes the replay behind the matrix, or "none".
func (res *Results) replayLine() string {
	if res.impl == nil && res.behind == nil {
		return "none"
	}
	var parts []string
	for _, r := range []*replay.Report{res.impl, res.behind} {
		if r != nil {
			parts = append(parts, fmt.Sprintf("%s (%s, %s)", r.Target, strings.TrimSpace(r.Protocol+" "+r.Profile), r.Mode))
		}
	}
	return strings.Join(parts, "; ")
}

// writeColumnsMarkdown writes the implementation and behind-warden columns
// of the cells that have them.
func writeColumnsMarkdown(b *strings.Builder, cells []Cell) {
	var rows []Cell
	for _, c := range cells {
		if c.Implementation != nil || c.BehindWarden != nil {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Implementation and behind warden\n\n")
	b.WriteString("| protocol | principle | model | model triage | implementation | triage | behind warden | triage | evidence |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		impl, it, bw, bt, ev := "—", "—", "—", "—", ""
		if c.Implementation != nil {
			impl, it, ev = string(c.Implementation.Outcome), c.Implementation.Triage, c.Implementation.Evidence
		}
		if c.BehindWarden != nil {
			bw, bt = string(c.BehindWarden.Outcome), c.BehindWarden.Triage
			if ev == "" {
				ev = c.BehindWarden.Evidence
			} else {
				ev += " / behind warden: " + c.BehindWarden.Evidence
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Protocol, c.Principle, c.Result,
			c.ModelTriage, impl, it, bw, bt, strings.ReplaceAll(ev, "|", "\\|"))
	}
}
