package attack

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
)

// SARIF 2.1.0 (OASIS), the subset code-scanning UIs read.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult            `json:"results"`
	Invocations        []sarifInvocation        `json:"invocations"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string         `json:"id"`
	Name             string         `json:"name,omitempty"`
	ShortDescription sarifText      `json:"shortDescription"`
	FullDescription  *sarifText     `json:"fullDescription,omitempty"`
	Properties       map[string]any `json:"properties,omitempty"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Kind       string          `json:"kind"`
	Level      string          `json:"level"`
	Message    sarifText       `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

// SARIFBase is the uriBaseId of document locations: the folder the run was
// started in, as code-scanning services expect (%SRCROOT%, the checkout).
const SARIFBase = "%SRCROOT%"

// sarifLocator turns document paths into artifact locations relative to a
// base folder.
type sarifLocator struct{ base string } // absolute, or "" when unknown

// artifact locates file: relative to the base (uriBaseId SARIFBase) when
// it is inside it, else an absolute file URI.
func (l sarifLocator) artifact(file string) sarifArtifact {
	abs, err := filepath.Abs(file)
	if err != nil || l.base == "" {
		return sarifArtifact{URI: relURI(file)}
	}
	if rel, err := filepath.Rel(l.base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(rel)}).EscapedPath(), URIBaseID: SARIFBase}
	}
	return sarifArtifact{URI: fileURI(abs)}
}

// fileURI renders an absolute path as a file URI.
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	Notifications       []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

// severityLevel maps an attack severity onto a SARIF level and a
// security-severity score (the 0–10 scale code-scanning UIs sort by).
func severityLevel(a *oatf.Value) (string, string) {
	switch a.Get("severity").Get("level").StringOr("") {
	case "critical":
		return "error", "9.5"
	case "high":
		return "error", "8.0"
	case "medium":
		return "warning", "5.5"
	case "low":
		return "note", "3.0"
	case "informational":
		return "note", "0.0"
	}
	return "warning", "5.0"
}

// WriteSARIF writes one SARIF 2.1.0 run for the outcomes: a rule per
// indicator, a result per matched indicator, located at the indicator in
// its document; documents that could not run are tool notifications.
// Locations are relative to base (uriBaseId %SRCROOT%, which the run's
// originalUriBaseIds resolves to base); "" means the working directory.
func WriteSARIF(w io.Writer, outcomes []Outcome, base string) error {
	if base == "" {
		base, _ = os.Getwd()
	}
	loc := sarifLocator{}
	if base != "" {
		loc.base, _ = filepath.Abs(base)
	}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "warden", InformationURI: "https://github.com/agentwarden/warden"}},
		Results: []sarifResult{}}
	if loc.base != "" {
		run.OriginalURIBaseIDs = map[string]sarifArtifact{SARIFBase: {URI: strings.TrimSuffix(fileURI(loc.base), "/") + "/"}}
	}
	run.Tool.Driver.Rules = []sarifRule{}
	inv := sarifInvocation{ExecutionSuccessful: true}
	for _, o := range outcomes {
		if o.Result == nil {
			if o.Err != nil {
				inv.Notifications = append(inv.Notifications, sarifNotification{Level: "error",
					Message: sarifText{fmt.Sprintf("%s (%s): %v", o.ID, o.File, o.Err)}})
				inv.ExecutionSuccessful = false
			}
			continue
		}
		if r := o.Result; r.Verdict.Result == oatf.Error {
			// The verdict says nothing about the target: the run is not a
			// successful execution, whatever else it produced.
			inv.ExecutionSuccessful = false
			inv.Notifications = append(inv.Notifications, sarifNotification{Level: "error",
				Message: sarifText{fmt.Sprintf("%s (%s): verdict error: %s", o.ID, o.File, r.errorText())}})
		} else {
			for _, act := range r.Actors {
				if act.Error != "" {
					inv.Notifications = append(inv.Notifications, sarifNotification{Level: "warning",
						Message: sarifText{fmt.Sprintf("%s (%s): actor %s failed: %s", o.ID, o.File, act.Name, act.Error)}})
				}
			}
		}
		a := o.Result.Document.Attack()
		level, score := severityLevel(a)
		var tags []string
		for _, t := range items(a.Get("classification").Get("tags")) {
			tags = append(tags, t.StringOr(""))
		}
		for _, ir := range o.Result.Indicators {
			desc := ir.Description
			if desc == "" {
				desc = a.Get("name").StringOr(ir.IndicatorID)
			}
			rule := sarifRule{ID: ir.IndicatorID, Name: a.Get("id").StringOr(""), ShortDescription: sarifText{desc},
				Properties: map[string]any{"security-severity": score, "tags": append([]string{"security", "oatf"}, tags...)}}
			if d := strings.TrimSpace(a.Get("description").StringOr("")); d != "" {
				rule.FullDescription = &sarifText{d}
			}
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, rule)
			if ir.Result != oatf.Matched {
				continue
			}
			where := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: loc.artifact(o.File)}}
			if ir.Pos.Line > 0 {
				where.PhysicalLocation.Region = &sarifRegion{StartLine: ir.Pos.Line, StartColumn: ir.Pos.Col}
			}
			run.Results = append(run.Results, sarifResult{RuleID: ir.IndicatorID, RuleIndex: len(run.Tool.Driver.Rules) - 1,
				Kind: "fail", Level: level,
				Message: sarifText{fmt.Sprintf("%s: %s. Evidence %q in %s (%s), attack verdict %s.",
					a.Get("name").StringOr(""), desc, clip(ir.Evidence, 200), ir.Method, ir.Actor, o.Result.Verdict.Result)},
				Locations: []sarifLocation{where},
				Properties: map[string]any{"attack": a.Get("id").StringOr(""), "verdict": o.Result.Verdict.Result,
					"evidence": ir.Evidence, "traceSeq": ir.Seq, "tier": ir.Tier}})
		}
	}
	run.Invocations = []sarifInvocation{inv}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

// JUnit XML, as CI systems read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	File      string      `xml:"file,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test suite per document with one test case for the
// document's verdict and one per indicator. An exploited (or partial)
// attack and a matched indicator are failures: the target is vulnerable.
// An error verdict or indicator is an error; a skipped one is skipped.
func WriteJUnit(w io.Writer, outcomes []Outcome) error {
	all := junitSuites{Name: "warden attack run"}
	var total time.Duration
	for _, o := range outcomes {
		s := junitSuite{Name: strings.TrimSpace(o.ID + " " + o.Name), File: relURI(o.File)}
		cls := o.ID
		docCase := junitCase{Name: o.ID + " verdict", Classname: cls}
		switch st := o.Status(); st {
		case oatf.Exploited, oatf.Partial:
			docCase.Failure = &junitProblem{Message: st, Type: st, Text: "the attack succeeded against the target"}
		case oatf.Error:
			text := ""
			if o.Err != nil {
				text = o.Err.Error()
			} else {
				text = o.Result.errorText()
			}
			docCase.Error = &junitProblem{Message: st, Type: st, Text: text}
		case "skipped":
			docCase.Skipped = &junitProblem{Message: o.Err.Error()}
		}
		if r := o.Result; r != nil {
			total += r.Duration
			docCase.Time = seconds(r.Duration)
			s.Time = seconds(r.Duration)
			s.Timestamp = r.Started.UTC().Format(time.RFC3339)
			if docCase.Error == nil && r.Failed() {
				var msgs []string
				for _, a := range r.Actors {
					if a.Error != "" {
						msgs = append(msgs, "actor "+a.Name+": "+a.Error)
					}
				}
				if docCase.Failure == nil {
					docCase.Error = &junitProblem{Message: "actor failed", Type: "error", Text: strings.Join(msgs, "\n")}
				}
			}
		}
		s.Cases = append(s.Cases, docCase)
		if o.Result != nil {
			for _, ir := range o.Result.Indicators {
				c := junitCase{Name: strings.TrimSpace(ir.IndicatorID + " " + ir.Description), Classname: cls, Time: "0"}
				switch ir.Result {
				case oatf.Matched:
					c.Failure = &junitProblem{Message: "matched", Type: "matched",
						Text: fmt.Sprintf("evidence %q at trace seq %d (%s, %s)", ir.Evidence, ir.Seq, ir.Actor, ir.Method)}
				case oatf.Error:
					c.Error = &junitProblem{Message: ir.ErrorKind, Type: "error", Text: ir.IndicatorVerdict.Message}
				case oatf.Skipped:
					c.Skipped = &junitProblem{Message: "no evaluator for this indicator's method"}
				}
				s.Cases = append(s.Cases, c)
			}
		}
		for _, c := range s.Cases {
			s.Tests++
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		if s.Time == "" {
			s.Time = "0"
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Skipped += s.Skipped
		all.Suites = append(all.Suites, s)
	}
	all.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
