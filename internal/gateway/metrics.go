package gateway

// Metrics for Prometheus, written in its text exposition format (0.0.4) by
// hand: a handful of counters and one histogram do not need a client
// library.
//
//	warden_messages_total{upstream,direction,kind}
//	warden_denials_total{upstream,stage}
//	mcp_server_operation_duration_seconds{mcp_method_name,upstream}   histogram
//	warden_telemetry_dropped_total{signal}, warden_telemetry_failed_total{signal}
//
// The duration is the OpenTelemetry MCP metric mcp.server.operation.duration:
// from the request leaving warden to its answer arriving, with the buckets
// the semantic conventions recommend.
//
// Every label takes its values from a set fixed by the code or the
// configuration, never from what a peer sends: upstream is a configured
// name, direction, kind and stage are warden's own words, and a method that
// neither MCP nor A2A defines is labelled "other" (jsonrpc.KnownMethod,
// the decoder's own list). So the
// number of series is bounded by the configuration, whatever clients and
// upstreams send (docs/telemetry.md, "Metrics").
//
// Recording takes mu for a few map updates. A scrape copies the values
// under mu and formats and writes them after releasing it, so a slow
// scraper, or a large page, never holds up the messages being counted.

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// otherMethod labels every method that neither MCP nor A2A defines.
const otherMethod = "other"

// durationBuckets are the upper bounds, in seconds, that the OpenTelemetry
// MCP semantic conventions recommend for mcp.server.operation.duration.
var durationBuckets = [...]float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Metrics counts what the gateway handles. It is safe for concurrent use;
// its zero value is ready.
type Metrics struct {
	// Recording, if set before first use, is the telemetry whose losses
	// the page shows: spans its Recorder dropped, and OCSF events its
	// Queue dropped or failed to export.
	Recording *telemetry.Recorder

	mu        sync.Mutex
	messages  map[[3]string]uint64     // upstream, direction, kind; guarded by mu
	denials   map[[2]string]uint64     // upstream, stage; guarded by mu
	durations map[[2]string]*histogram // method, upstream; guarded by mu
}

type histogram struct {
	counts [len(durationBuckets)]uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

// metricMethod is the label of method: itself if some MCP revision or A2A
// version defines it, else "other".
func metricMethod(method string) string {
	if jsonrpc.KnownMethod(method) {
		return method
	}
	return otherMethod
}

// observe counts d; an answer to a forwarded request also records the
// operation's duration.
func (m *Metrics) observe(d *Decision) {
	var dur time.Duration
	timed := false
	if o, ok := d.Open.(*openCall); ok && d.Direction != "client" && d.Kind == jsonrpc.KindResponse {
		dur, timed = time.Since(o.start), true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	m.messages[[3]string{d.Upstream, d.Direction, d.Kind.String()}]++
	if d.Denial != nil {
		m.denials[[2]string{d.Upstream, d.Denial.Stage}]++
	}
	if timed {
		k := [2]string{metricMethod(d.Method), d.Upstream}
		h := m.durations[k]
		if h == nil {
			h = &histogram{}
			m.durations[k] = h
		}
		s := dur.Seconds()
		for i, b := range durationBuckets {
			if s <= b {
				h.counts[i]++
				break
			}
		}
		h.count++
		h.sum += s
	}
}

// refused counts a request that upstream's listener refused for a bound
// (a session limit, a body too slow): a denial of stage "listener".
func (m *Metrics) refused(upstream string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	m.denials[[2]string{upstream, "listener"}]++
}

// initLocked makes the maps of a zero Metrics; m.mu is held.
func (m *Metrics) initLocked() {
	if m.messages == nil {
		m.messages = map[[3]string]uint64{}
		m.denials = map[[2]string]uint64{}
		m.durations = map[[2]string]*histogram{}
	}
}

// series is one labelled value of a snapshot.
type series[K [2]string | [3]string, V any] struct {
	key K
	val V
}

// snapshot copies the values, sorted by their labels, holding mu only for
// the copy.
func (m *Metrics) snapshot() ([]series[[3]string, uint64], []series[[2]string, uint64], []series[[2]string, histogram]) {
	m.mu.Lock()
	messages, denials := collect(m.messages, id), collect(m.denials, id)
	durations := collect(m.durations, func(h *histogram) histogram { return *h })
	m.mu.Unlock()
	cmp3 := func(a, b [3]string) int { return slices.Compare(a[:], b[:]) }
	cmp2 := func(a, b [2]string) int { return slices.Compare(a[:], b[:]) }
	return sorted(messages, cmp3), sorted(denials, cmp2), sorted(durations, cmp2)
}

func id[V any](v V) V { return v }

// collect copies the values of m, through value.
func collect[K [2]string | [3]string, V, W any](m map[K]V, value func(V) W) []series[K, W] {
	s := make([]series[K, W], 0, len(m))
	for k, v := range m {
		s = append(s, series[K, W]{k, value(v)})
	}
	return s
}

func sorted[K [2]string | [3]string, V any](s []series[K, V], compare func(a, b K) int) []series[K, V] {
	slices.SortFunc(s, func(a, b series[K, V]) int { return compare(a.key, b.key) })
	return s
}

// ServeHTTP writes the metrics in Prometheus text format, from a snapshot:
// nothing is held while the page is written.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	messages, denials, durations := m.snapshot()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	b := bufio.NewWriterSize(w, 4096)
	var line []byte
	put := func() { _, _ = b.Write(line); line = line[:0] }
	b.WriteString("# HELP warden_messages_total Messages the gateway handled.\n# TYPE warden_messages_total counter\n")
	for _, s := range messages {
		line = append(line, "warden_messages_total{upstream="...)
		line = appendLabel(line, s.key[0])
		line = appendLabel(append(line, ",direction="...), s.key[1])
		line = appendLabel(append(line, ",kind="...), s.key[2])
		line = strconv.AppendUint(append(line, "} "...), s.val, 10)
		line = append(line, '\n')
		put()
	}
	b.WriteString("# HELP warden_denials_total Messages refused, by the stage that refused them.\n# TYPE warden_denials_total counter\n")
	for _, s := range denials {
		line = append(line, "warden_denials_total{upstream="...)
		line = appendLabel(line, s.key[0])
		line = appendLabel(append(line, ",stage="...), s.key[1])
		line = strconv.AppendUint(append(line, "} "...), s.val, 10)
		line = append(line, '\n')
		put()
	}
	b.WriteString("# HELP mcp_server_operation_duration_seconds MCP request duration through the gateway (mcp.server.operation.duration).\n" +
		"# TYPE mcp_server_operation_duration_seconds histogram\n")
	for _, s := range durations {
		labels := appendLabel([]byte("mcp_method_name="), s.key[0])
		labels = appendLabel(append(labels, ",upstream="...), s.key[1])
		h := s.val
		var cum uint64
		for i, ub := range durationBuckets {
			cum += h.counts[i]
			line = append(append(append(line, "mcp_server_operation_duration_seconds_bucket{"...), labels...), `,le="`...)
			line = strconv.AppendFloat(line, ub, 'g', -1, 64)
			line = strconv.AppendUint(append(line, `"} `...), cum, 10)
			line = append(line, '\n')
		}
		line = append(append(append(line, "mcp_server_operation_duration_seconds_bucket{"...), labels...), `,le="+Inf"} `...)
		line = strconv.AppendUint(line, h.count, 10)
		line = append(append(append(line, "\nmcp_server_operation_duration_seconds_sum{"...), labels...), "} "...)
		line = strconv.AppendFloat(line, h.sum, 'g', -1, 64)
		line = append(append(append(line, "\nmcp_server_operation_duration_seconds_count{"...), labels...), "} "...)
		line = strconv.AppendUint(line, h.count, 10)
		line = append(line, '\n')
		put()
	}
	if m.Recording != nil {
		st := m.Recording.Stats()
		line = append(line, "# HELP warden_telemetry_dropped_total Telemetry dropped by a full queue: spans (each with its OCSF events), or OCSF events.\n"+
			"# TYPE warden_telemetry_dropped_total counter\n"+
			`warden_telemetry_dropped_total{signal="spans"} `...)
		line = strconv.AppendUint(line, st.Dropped, 10)
		line = strconv.AppendUint(append(line, "\nwarden_telemetry_dropped_total{signal=\"ocsf\"} "...), st.OCSF.Dropped, 10)
		line = append(line, "\n# HELP warden_telemetry_failed_total Telemetry whose export failed, not retried: spans, or OCSF events.\n"+
			"# TYPE warden_telemetry_failed_total counter\n"+
			`warden_telemetry_failed_total{signal="spans"} `...)
		line = strconv.AppendUint(line, st.Failed, 10)
		line = strconv.AppendUint(append(line, "\nwarden_telemetry_failed_total{signal=\"ocsf\"} "...), st.OCSF.Failed, 10)
		line = append(line, '\n')
		put()
	}
	_ = b.Flush()
}

// labelEscaper quotes what the text format requires in a label value.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// appendLabel appends v as a quoted label value.
func appendLabel(b []byte, v string) []byte {
	return append(append(append(b, '"'), labelEscaper.Replace(v)...), '"')
}
