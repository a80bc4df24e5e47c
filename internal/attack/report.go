package attack

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
)

// Outcome is one document of a run, as the reports see it: the document's
// identity and either its Result or the error that kept it from running.
type Outcome struct {
	File   string
	ID     string
	Name   string
	Result *Result // nil when the document did not run
	Err    error   // why it did not run, or nil
}

// Status is the outcome's one-word state: a verdict result, "error" when it
// could not run, or "skipped" when it needs an endpoint not given.
func (o Outcome) Status() string {
	if o.Result != nil {
		return o.Result.Verdict.Result
	}
	if _, ok := o.Err.(*EndpointError); ok {
		return "skipped"
	}
	return oatf.Error
}

// verdictDoc is the verdict JSON: OATF §9.3 metadata under "verdict", with
// the attack's identity and what the run did.
type verdictDoc struct {
	Attack    attackInfo  `json:"attack"`
	Verdict   verdictInfo `json:"verdict"`
	Execution execInfo    `json:"execution_summary"`
}

type attackInfo struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Version  int64    `json:"version,omitempty"`
	File     string   `json:"file,omitempty"`
	Severity any      `json:"severity,omitempty"`
	Category string   `json:"category,omitempty"`
	Impact   []string `json:"impact,omitempty"`
}

type verdictInfo struct {
	Result string `json:"result"`
	// Error says why the run could not test its target (an actor failed,
	// the run timed out, no peer answered); the result is then error.
	Error             string          `json:"error,omitempty"`
	MaxTier           string          `json:"max_tier,omitempty"`
	IndicatorVerdicts []indicatorInfo `json:"indicator_verdicts"`
	Summary           oatf.Summary    `json:"evaluation_summary"`
	Correlation       string          `json:"correlation"`
	Timestamp         time.Time       `json:"timestamp"`
	Source            string          `json:"source"`
}

type indicatorInfo struct {
	ID          string     `json:"indicator_id"`
	Result      string     `json:"result"`
	Timestamp   *time.Time `json:"timestamp,omitempty"`
	Evidence    string     `json:"evidence,omitempty"`
	Source      string     `json:"source,omitempty"`
	ErrorKind   string     `json:"error_kind,omitempty"`
	Message     string     `json:"message,omitempty"`
	Tier        string     `json:"tier,omitempty"`
	Description string     `json:"description,omitempty"`
	// Unmatchable says why the indicator could never match (rule
	// unmatchable-target; run with --allow-unmatchable).
	Unmatchable string `json:"unmatchable,omitempty"`
}

type execInfo struct {
	Started      time.Time         `json:"started"`
	DurationMS   int64             `json:"duration_ms"`
	TimedOut     bool              `json:"timed_out,omitempty"`
	Actors       []ActorSummary    `json:"actors"`
	Endpoints    map[string]string `json:"endpoints,omitempty"`
	TraceEntries int               `json:"trace_entries"`
	TraceDropped int               `json:"trace_dropped,omitempty"`
}

// Source is the verdict's "source" field.
const Source = "warden attack run"

// VerdictJSON renders a result as the verdict JSON document.
func VerdictJSON(r *Result) ([]byte, error) {
	a := r.Document.Attack()
	d := verdictDoc{
		Attack: attackInfo{ID: a.Get("id").StringOr(""), Name: a.Get("name").StringOr(""),
			Version: a.Get("version").Int, File: r.Document.File, Category: a.Get("classification").Get("category").StringOr("")},
		Verdict: verdictInfo{Result: r.Verdict.Result, Error: r.Error, MaxTier: r.Verdict.MaxTier, Summary: r.Verdict.Summary,
			Correlation: a.Get("correlation").Get("logic").StringOr("any"), Timestamp: r.Verdict.Timestamp, Source: Source,
			IndicatorVerdicts: []indicatorInfo{}},
		Execution: execInfo{Started: r.Started.UTC(), DurationMS: r.Duration.Milliseconds(), TimedOut: r.TimedOut,
			Actors: r.Actors, Endpoints: r.Endpoints, TraceEntries: len(r.Trace), TraceDropped: r.Dropped},
	}
	if s := a.Get("severity"); s != nil {
		d.Attack.Severity = s.ToAny()
	}
	for _, im := range items(a.Get("impact")) {
		d.Attack.Impact = append(d.Attack.Impact, im.StringOr(""))
	}
	for _, ir := range r.Indicators {
		ii := indicatorInfo{ID: ir.IndicatorID, Result: ir.Result, Evidence: ir.Evidence, ErrorKind: ir.ErrorKind,
			Message: ir.IndicatorVerdict.Message, Tier: ir.Tier, Description: ir.Description, Unmatchable: ir.Unmatchable}
		if !ir.IndicatorVerdict.Timestamp.IsZero() {
			ts := ir.IndicatorVerdict.Timestamp.UTC()
			ii.Timestamp = &ts
		}
		if ir.Seq > 0 {
			ii.Source = fmt.Sprintf("trace seq %d (actor %s, %s)", ir.Seq, ir.Actor, ir.Method)
		}
		d.Verdict.IndicatorVerdicts = append(d.Verdict.IndicatorVerdicts, ii)
	}
	return json.MarshalIndent(d, "", "  ")
}

// WriteSummary writes the human summary of one result.
func WriteSummary(w io.Writer, r *Result) {
	a := r.Document.Attack()
	fmt.Fprintf(w, "%s  %s\n", a.Get("id").StringOr("-"), a.Get("name").StringOr(""))
	tier := ""
	if r.Verdict.MaxTier != "" {
		tier = " (max tier " + r.Verdict.MaxTier + ")"
	}
	fmt.Fprintf(w, "verdict: %s%s  matched %d, not matched %d, error %d, skipped %d  in %s\n",
		strings.ToUpper(r.Verdict.Result), tier, r.Verdict.Summary.Matched, r.Verdict.Summary.NotMatched,
		r.Verdict.Summary.Error, r.Verdict.Summary.Skipped, r.Duration.Round(time.Millisecond))
	if r.Error != "" {
		fmt.Fprintf(w, "  the target was not really exercised: %s\n", r.Error)
	}
	for _, ir := range r.Indicators {
		line := fmt.Sprintf("  %-12s %s", ir.Result, ir.IndicatorID)
		if ir.Description != "" {
			line += "  " + ir.Description
		}
		switch {
		case ir.Result == oatf.Matched:
			line += fmt.Sprintf("\n               evidence %q at trace seq %d (%s, %s)", clip(ir.Evidence, 80), ir.Seq, ir.Actor, ir.Method)
		case ir.Result == oatf.Error:
			line += "\n               " + ir.ErrorKind + ": " + ir.IndicatorVerdict.Message
		case ir.Unmatchable != "":
			line += "\n               it could never match: " + ir.Unmatchable
		case ir.Considered == 0:
			line += "  (no message in the trace passed its filter)"
		}
		fmt.Fprintln(w, line)
	}
	for _, act := range r.Actors {
		status := "done"
		if !act.Terminal {
			status = "stopped before its terminal phase"
		}
		if act.PeerMessages == 0 {
			status += "; its peer never sent it a message"
		}
		if act.Error != "" {
			status = "failed: " + act.Error
		}
		fmt.Fprintf(w, "  actor %-14s %-13s phase %-20s %s\n", act.Name, act.Mode, act.Phase, status)
	}
	if r.TimedOut {
		fmt.Fprintln(w, "  the run reached its maximum session time")
	}
	fmt.Fprintf(w, "  %d messages traced\n", len(r.Trace))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// relURI renders a file path for SARIF: forward slashes, relative as given.
func relURI(p string) string { return filepath.ToSlash(p) }

// errorText says why a result's verdict is error: the run's reason, else
// the indicators that failed to evaluate, else that all were skipped.
func (r *Result) errorText() string {
	if r.Error != "" {
		return r.Error
	}
	var msgs []string
	for _, ir := range r.Indicators {
		if ir.Result == oatf.Error {
			msgs = append(msgs, fmt.Sprintf("indicator %s: %s: %s", ir.IndicatorID, ir.ErrorKind, ir.IndicatorVerdict.Message))
		}
	}
	if len(msgs) == 0 {
		return "the attack could not be evaluated (no indicator could be evaluated)"
	}
	return strings.Join(msgs, "; ")
}
