package gateway

// Metrics for Prometheus, written in its text exposition format (0.0.4) by
// hand: a handful of counters and one histogram do not need a client
// library.
//
//	warden_messages_total{upstream,direction,kind}
//	warden_denials_total{upstream,stage}
//	mcp_server_operation_duration_seconds{mcp_method_name,upstream}   histogram
//
// The duration is the OpenTelemetry MCP metric mcp.server.operation.duration:
// from the request leaving warden to its answer arriving, with the buckets
// the semantic conventions recommend.

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// durationBuckets are the upper bounds, in seconds, that the OpenTelemetry
// MCP semantic conventions recommend for mcp.server.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Metrics counts what the gateway handles. It is safe for concurrent use;
// its zero value is ready.
type Metrics struct {
	mu        sync.Mutex
	messages  map[[3]string]uint64     // upstream, direction, kind; guarded by mu
	denials   map[[2]string]uint64     // upstream, stage; guarded by mu
	durations map[[2]string]*histogram // method, upstream; guarded by mu
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
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
	if m.messages == nil {
		m.messages = map[[3]string]uint64{}
		m.denials = map[[2]string]uint64{}
		m.durations = map[[2]string]*histogram{}
	}
	m.messages[[3]string{d.Upstream, d.Direction, d.Kind.String()}]++
	if d.Denial != nil {
		m.denials[[2]string{d.Upstream, d.Denial.Stage}]++
	}
	if timed {
		k := [2]string{d.Method, d.Upstream}
		h := m.durations[k]
		if h == nil {
			h = &histogram{counts: make([]uint64, len(durationBuckets))}
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

// ServeHTTP writes the metrics in Prometheus text format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	m.mu.Lock()
	b.WriteString("# HELP warden_messages_total Messages the gateway handled.\n# TYPE warden_messages_total counter\n")
	for _, k := range sortedKeys(m.messages) {
		fmt.Fprintf(&b, "warden_messages_total{upstream=%s,direction=%s,kind=%s} %d\n", label(k[0]), label(k[1]), label(k[2]), m.messages[k])
	}
	b.WriteString("# HELP warden_denials_total Messages refused, by the stage that refused them.\n# TYPE warden_denials_total counter\n")
	for _, k := range sortedKeys(m.denials) {
		fmt.Fprintf(&b, "warden_denials_total{upstream=%s,stage=%s} %d\n", label(k[0]), label(k[1]), m.denials[k])
	}
	b.WriteString("# HELP mcp_server_operation_duration_seconds MCP request duration through the gateway (mcp.server.operation.duration).\n" +
		"# TYPE mcp_server_operation_duration_seconds histogram\n")
	for _, k := range sortedKeys(m.durations) {
		h := m.durations[k]
		labels := "mcp_method_name=" + label(k[0]) + ",upstream=" + label(k[1])
		var cum uint64
		for i, ub := range durationBuckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "mcp_server_operation_duration_seconds_bucket{%s,le=\"%s\"} %d\n", labels, strconv.FormatFloat(ub, 'g', -1, 64), cum)
		}
		fmt.Fprintf(&b, "mcp_server_operation_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels, h.count)
		fmt.Fprintf(&b, "mcp_server_operation_duration_seconds_sum{%s} %s\n", labels, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(&b, "mcp_server_operation_duration_seconds_count{%s} %d\n", labels, h.count)
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// label quotes a label value as the text format requires.
func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

func sortedKeys[K [2]string | [3]string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}
