package demo

// The demo's Record part. The gateway records as `warden gateway` does
// with audit, telemetry and metrics on: the audit log (SQLite, signed
// checkpoints), spans written by the jsonl span exporter, OCSF events by
// the jsonl OCSF exporter behind its queue, and /metrics. Once the gateway
// has stopped (its Recorder has exported the last span, the OCSF queue has
// drained), the demo reads those files and the metrics page back and
// prints what they hold: nothing here counts on its own.
//
//	gateway ─▶ audit log ─────────────────────────▶ VerifyWith: records, chain, checkpoints
//	        ─▶ Recorder (queue) ─▶ spans.jsonl ───▶ spans by name
//	                           └─▶ OCSF queue ─▶ ocsf.jsonl ─▶ events by class, findings
//	        ─▶ Metrics ─▶ GET /metrics ───────────▶ warden_telemetry_dropped_total

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Files are the demo's records on disk, in its temporary folder.
type Files struct {
	Audit string // the audit log (SQLite)
	Spans string // spans, one JSON object per line (telemetry.spans.exporter: jsonl)
	OCSF  string // OCSF events, one per line (telemetry.ocsf.exporter: jsonl)
}

func (s *scene) files() Files {
	return Files{Audit: filepath.Join(s.root, ".warden-audit.db"), Spans: filepath.Join(s.root, ".warden-spans.jsonl"),
		OCSF: filepath.Join(s.root, ".warden-ocsf.jsonl")}
}

// deferredSpans is the Recorder's queue of operations whose spans are yet
// to be ended, as `warden gateway` sizes it: a full queue drops them, and
// warden_telemetry_dropped_total counts them.
const deferredSpans = 4096

// recording builds the gateway's Records: the audit log l, a Recorder that
// exports spans and OCSF events to the demo's files, off the calls' path,
// and the metrics page that counts what it dropped. The closers flush and
// close the Recorder, then the OCSF queue; the gateway closes them when it
// stops.
func (s *scene) recording(l *audit.Log, logger *slog.Logger) (*gateway.Records, []io.Closer, error) {
	f := s.files()
	spans, err := telemetry.NewSpanExporter(context.Background(), telemetry.SpanExport{
		Kind: telemetry.SpanExporterJSONL, Path: f.Spans, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	events, err := telemetry.NewOCSFQueue(telemetry.OCSFExport{Kind: telemetry.OCSFExporterJSONL, Path: f.OCSF},
		telemetry.QueueOptions{Logger: logger})
	if err != nil {
		spans.Shutdown(context.Background())
		return nil, nil, err
	}
	rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: spans, Deferred: deferredSpans,
		OCSFSink: events, OCSFProfile: s.opts.OCSFProfile, Logger: logger,
		Product: ocsf.Product{Name: "warden", VendorName: "agentwarden"}})
	rs := &gateway.Records{Audit: l, Spans: rec, Transport: telemetry.TransportStreamableHTTP,
		Metrics: &gateway.Metrics{Recording: rec}}
	flush := func(close func(context.Context) error) io.Closer {
		return closerFunc(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return close(ctx)
		})
	}
	return rs, []io.Closer{flush(rec.Close), flush(events.Close)}, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// closeAudit closes the audit log, once.
func (s *scene) closeAudit() error {
	s.auditOnce.Do(func() {
		if s.audit != nil {
			s.auditErr = s.audit.Close()
		}
	})
	return s.auditErr
}

// recorded prints the Record part: what the audit log, the span and OCSF
// files and the metrics page hold, once the gateway has stopped.
func (s *scene) recorded() {
	w := s.opts.Out
	fmt.Fprintf(w, "\nRecord: what warden wrote of the session and of the attack run through it:\n\n")
	s.auditRecords()
	f := s.files()
	spans, err := readSpans(f.Spans)
	s.expect(err == nil, "the span file: %v", err)
	if err == nil {
		s.res.Spans = spans.total
		fmt.Fprintf(w, "    spans    %d, by AITF name (and OpenTelemetry MCP method, where it differs):\n", spans.total)
		for _, line := range wrap(spans.byName(), 88) {
			fmt.Fprintf(w, "               %s\n", line)
		}
	}
	events, err := readEvents(f.OCSF)
	s.expect(err == nil, "the OCSF file: %v", err)
	if err == nil {
		s.res.OCSFEvents = events.total
		fmt.Fprintf(w, "    OCSF     %d events: %s\n", events.total, events.byClass())
		if len(events.findings) > 0 {
			fmt.Fprintf(w, "             the security processor's findings among them, by call:\n")
			for _, line := range events.securityFindings() {
				fmt.Fprintf(w, "               %s\n", line)
			}
		}
	}
	dropped, err := s.droppedTelemetry()
	s.expect(err == nil, "the metrics page: %v", err)
	if err == nil {
		s.res.Dropped = dropped["spans"] + dropped["ocsf"]
		fmt.Fprintf(w, "    dropped  %d spans, %d OCSF events (warden_telemetry_dropped_total on /metrics)\n",
			dropped["spans"], dropped["ocsf"])
		s.expect(s.res.Dropped == 0, "the gateway dropped telemetry: %v", dropped)
	}
}

// auditRecords verifies the audit log with its audit key's public half and
// prints what it holds.
func (s *scene) auditRecords() {
	w := s.opts.Out
	rep, err := s.audit.VerifyWith(context.Background(), audit.VerifyOptions{Keys: []*audit.VerifyKey{s.auditKey.Public()}})
	switch {
	case err != nil || rep.Problem != nil:
		s.expect(false, "the audit log does not verify: %v %v", rep.Problem, err)
	case rep.Checkpoints == 0:
		s.expect(false, "the audit log has no signed checkpoint after %d records", rep.Records)
	default:
		s.res.AuditRecords = rep.Records
		unattested := 0
		if rep.Unattested != nil {
			unattested = rep.Unattested.Count
		}
		fmt.Fprintf(w, "    audit    %d records, one per message, written before each left; the hash chain verifies\n"+
			"             (head %d:%s…), and %d checkpoints signed by its audit key attest it up to seq %d\n"+
			"             (the %d after wait for the next; warden audit verify FILE --key KEY.pub names a forged append)\n",
			rep.Records, rep.Head.Seq, rep.Head.Hash[:16], rep.Checkpoints, rep.LastCheckpoint.Seq, unattested)
	}
}

// spanCounts are the spans of the span file, by name.
type spanCounts struct {
	total  int
	counts map[string]int    // by AITF name, without its target ("mcp.tool.invoke")
	otel   map[string]string // the OpenTelemetry MCP method of each (mcp.method.name)
}

func readSpans(path string) (*spanCounts, error) {
	c := &spanCounts{counts: map[string]int{}, otel: map[string]string{}}
	err := eachLine(path, func(line []byte) error {
		var sp struct {
			Name       string
			Attributes []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := json.Unmarshal(line, &sp); err != nil {
			return err
		}
		name, _, _ := strings.Cut(sp.Name, " ")
		c.total++
		c.counts[name]++
		for _, a := range sp.Attributes {
			if a.Key == "mcp.method.name" {
				if m, ok := a.Value.Value.(string); ok {
					c.otel[name] = m
				}
			}
		}
		return nil
	})
	return c, err
}

// byName is "mcp.tool.invoke 25 (tools/call)", most first: the AITF name
// without its target, and the OpenTelemetry MCP method when it differs.
func (c *spanCounts) byName() []string {
	var out []string
	for _, name := range mostFirst(c.counts) {
		item := fmt.Sprintf("%s %d", name, c.counts[name])
		if m := c.otel[name]; m != "" && m != name {
			item += " (" + m + ")"
		}
		out = append(out, item)
	}
	return out
}

// eventCounts are the events of the OCSF file, by class, and the security
// processor's findings among them.
type eventCounts struct {
	total    int
	classes  map[string]int
	findings []*securityFinding // by call, in the file's order
}

// securityFinding is what the Detection Findings of the security
// processor say of one call: its audit record, the rules that found
// something, and the disposition.
type securityFinding struct {
	seq         int64
	rules       []string
	disposition string
}

// securityAnalytic begins the analytic name of the security stage's
// findings ("security: file_access/traversal").
const securityAnalytic = "security: "

func readEvents(path string) (*eventCounts, error) {
	c := &eventCounts{classes: map[string]int{}}
	bySeq := map[int64]*securityFinding{}
	err := eachLine(path, func(line []byte) error {
		var ev struct {
			ClassUID    int    `json:"class_uid"`
			ClassName   string `json:"class_name"`
			Disposition string `json:"disposition"`
			FindingInfo struct {
				Analytic struct{ Name string }
			} `json:"finding_info"`
			Unmapped struct {
				Seq int64 `json:"warden.audit.seq"`
			} `json:"unmapped"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		c.total++
		c.classes[ev.ClassName]++
		rule, ok := strings.CutPrefix(ev.FindingInfo.Analytic.Name, securityAnalytic)
		if !ok || ev.ClassUID != ocsf.ClassDetectionFinding {
			return nil
		}
		f := bySeq[ev.Unmapped.Seq]
		if f == nil {
			f = &securityFinding{seq: ev.Unmapped.Seq, disposition: ev.Disposition}
			bySeq[f.seq] = f
			c.findings = append(c.findings, f)
		}
		if !slices.Contains(f.rules, rule) {
			f.rules = append(f.rules, rule)
		}
		return nil
	})
	return c, err
}

// securityFindings is one "file_access/traversal: Blocked (audit record
// 8)" per call, in the order of the file.
func (c *eventCounts) securityFindings() []string {
	out := make([]string, len(c.findings))
	for i, f := range c.findings {
		// The rules of one category share its name: "prompt_injection/override, /prompt-extraction".
		rules := slices.Clone(f.rules)
		for j := 1; j < len(rules); j++ {
			if cat, _, ok := strings.Cut(rules[0], "/"); ok {
				if r, ok := strings.CutPrefix(rules[j], cat+"/"); ok {
					rules[j] = "/" + r
				}
			}
		}
		out[i] = fmt.Sprintf("%s: %s (audit record %d)", strings.Join(rules, ", "), f.disposition, f.seq)
	}
	return out
}

// byClass is "API Activity 80, Detection Finding 27", most first.
func (c *eventCounts) byClass() string {
	var out []string
	for _, name := range mostFirst(c.classes) {
		out = append(out, fmt.Sprintf("%s %d", name, c.classes[name]))
	}
	return strings.Join(out, ", ")
}

// droppedTelemetry reads warden_telemetry_dropped_total from the gateway's
// metrics page, as GET /metrics serves it, by signal.
func (s *scene) droppedTelemetry() (map[string]uint64, error) {
	m := s.metrics
	if m == nil {
		return nil, errors.New("no metrics")
	}
	rr := httptest.NewRecorder()
	m.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rr.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", rr.Code)
	}
	dropped := map[string]uint64{}
	for line := range strings.Lines(rr.Body.String()) {
		rest, ok := strings.CutPrefix(line, `warden_telemetry_dropped_total{signal="`)
		if !ok {
			continue
		}
		signal, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("GET /metrics: %q", line)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("GET /metrics: %q: %w", line, err)
		}
		dropped[signal] = n
	}
	if len(dropped) == 0 {
		return nil, errors.New("GET /metrics has no warden_telemetry_dropped_total")
	}
	return dropped, nil
}

// eachLine calls fn with each non-empty line of the file at path.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for n := 1; sc.Scan(); n++ {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			if err := fn(line); err != nil {
				return fmt.Errorf("%s:%d: %w", filepath.Base(path), n, err)
			}
		}
	}
	return sc.Err()
}

// mostFirst returns the keys of counts, the largest count first, then by
// name.
func mostFirst(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	return keys
}

// wrap joins items with ", " into lines of at most width characters.
func wrap(items []string, width int) []string {
	var lines []string
	var cur string
	for i, it := range items {
		sep := ""
		if i < len(items)-1 {
			sep = ","
		}
		switch {
		case cur == "":
			cur = it + sep
		case len(cur)+1+len(it)+len(sep) > width:
			lines = append(lines, cur)
			cur = it + sep
		default:
			cur += " " + it + sep
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
