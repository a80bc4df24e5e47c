// Command bench measures warden's gateway against the same MCP server reached
// directly, side by side in one run, and writes bench/results.json and
// BENCHMARKS.md. Run it with `make bench`.
//
// Every measurement pairs a direct run with a run through warden, with the
// same client (go-sdk), the same server (the demo server's echo tool) and the
// same load, so the ratios are measured rather than assumed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/transport"
)

// Result is one row of bench/results.json.
type Result struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	Note   string  `json:"note,omitempty"`
	// Min and Max, when set, are the lowest and highest of the rounds'
	// values, of which Value is the median.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Skipped says why the row was not measured in this run (Value is
	// then 0 and means nothing).
	Skipped string `json:"skipped,omitempty"`
	// Host, on the floors section's rows, is the host's activity over the
	// row's measured windows.
	Host *HostNoise `json:"host,omitempty"`
	// Verdict is "noisy host" when the row has a target but the host was
	// too busy during the row to back a verdict; Met is then absent.
	Verdict string `json:"verdict,omitempty"`

	// plainNote is Note before judge prefixed it with "target not met".
	plainNote string
}

type report struct {
	Date string `json:"date"`
	Go   string `json:"go"`
	CPUs int    `json:"cpus"`
	// CPUAccounting says how the floors section read each process's CPU.
	CPUAccounting string   `json:"cpu_accounting,omitempty"`
	Results       []Result `json:"results"`
}

func main() {
	calls := flag.Int("calls", 3000, "sequential calls per latency run")
	workers := flag.Int("workers", 8, "concurrent sessions per throughput run")
	perWorker := flag.Int("per-worker", 1000, "calls per session in throughput runs")
	rounds := flag.Int("rounds", 5, "interleaved direct/warden rounds per measure; medians are reported")
	out := flag.String("out", "bench", "directory for results.json")
	doc := flag.String("doc", "BENCHMARKS.md", "readable report to write")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to `file`")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the whole run to `file`")
	only := flag.String("only", "", "run only these `sections`, comma-separated: http, stdio, zerotrust, records, floors, conform, attack, scale, wire, notify, detection (results.json and BENCHMARKS.md are then not written)")
	floor := flag.String("floor", "", "run as a floor relay process instead (`kind` http or stdio; started by the floors section)")
	floorListen := flag.String("listen", "", "-floor http: the loopback `address` to listen on")
	floorUpstream := flag.String("upstream", "", "-floor http: the upstream's base `URL`")
	render := flag.Bool("render", false, "measure nothing: rewrite the readable report from the results.json in -out (after a change to the report's text)")
	flag.Parse()
	if *render {
		if err := rerender(*out, *doc, *rounds, *calls, *workers, *perWorker); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *floor != "" {
		os.Exit(runFloor(*floor, *floorListen, *floorUpstream, flag.Args()))
	}
	run := func(section string) bool { return *only == "" || slices.Contains(strings.Split(*only, ","), section) }
	if *memprofile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(*memprofile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}()
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}

	ctx := context.Background()
	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Go: runtime.Version(), CPUs: runtime.NumCPU(), CPUAccounting: cpuAccounting()}
	add := func(r Result) {
		rep.Results = append(rep.Results, r)
		verdict := ""
		switch {
		case r.Verdict != "":
			verdict = "  [" + r.Verdict + "; " + r.Host.noisy() + "]"
		case r.Met != nil && *r.Met:
			verdict = "  [met " + r.Target + "]"
		case r.Met != nil:
			verdict = "  [NOT met " + r.Target + "]"
		}
		switch {
		case r.Skipped != "":
			log.Printf("%-48s skipped: %s", r.Name, r.Skipped)
		case r.Min != nil:
			log.Printf("%-48s %12.2f %s (%.2f–%.2f)%s", r.Name, r.Value, r.Unit, *r.Min, *r.Max, verdict)
		default:
			log.Printf("%-48s %12.2f %s%s", r.Name, r.Value, r.Unit, verdict)
		}
	}

	if run("http") {
		benchHTTP(ctx, add, *rounds, *calls, *workers, *perWorker)
	}
	if run("stdio") {
		benchStdio(ctx, add, *rounds, *calls, *perWorker)
	}
	if run("zerotrust") {
		benchZeroTrust(ctx, add, *rounds, *workers, *perWorker)
	}
	if run("records") {
		benchRecords(ctx, add, *rounds, *perWorker, *workers)
	}
	if run("floors") {
		benchFloors(ctx, add, *rounds, *workers, *perWorker, *calls)
	}
	if run("conform") {
		benchConform(ctx, add)
	}
	if run("attack") {
		benchAttack(ctx, add, *rounds)
	}
	if run("scale") {
		benchScale(ctx, add, *rounds, *perWorker)
	}
	if run("wire") {
		benchWire(add, *rounds)
	}
	if run("notify") {
		benchNotify(ctx, add, *rounds)
	}
	if run("detection") {
		benchDetection(add)
	}
	if run("stdio") {
		bin := buildWarden()
		defer os.RemoveAll(filepath.Dir(bin))
		root, _ := os.MkdirTemp("", "warden-bench-")
		defer os.RemoveAll(root)
		rss, anon := idleRSS(bin, root)
		add(target(Result{Name: "idle gateway RSS", Value: rss, Unit: "MB", Target: "< 30 MB"}, rss < 30))
		add(Result{Name: "idle gateway RSS, private (anonymous) part", Value: anon, Unit: "MB",
			Note: "the rest of the RSS is pages of the warden binary itself, mapped from the file: shared with every other warden process and reclaimable by the kernel"})
	}
	if *only != "" {
		return
	}
	writeReports(rep, *out, *doc, *rounds, *calls, *workers, *perWorker)
}

// benchHTTP compares the go-sdk client against the demo server directly and
// through warden, over HTTP keep-alive.
func benchHTTP(ctx context.Context, add func(Result), rounds, calls, workers, perWorker int) {
	upstream := serveDemoHTTP()
	gw := serveGateway(upstream)
	lat := func(url string) []time.Duration { return latencies(ctx, httpTransport(url), calls) }
	var directLat, gwLat []time.Duration
	var addedByRound []float64
	for range rounds { // interleaved, so both sides see the same background noise
		d, g := lat(upstream), lat(gw)
		directLat, gwLat = append(directLat, d...), append(gwLat, g...)
		addedByRound = append(addedByRound, us(pct(g, 50)-pct(d, 50)))
	}
	p50d, p99d := pct(directLat, 50), pct(directLat, 99)
	p50g, p99g := pct(gwLat, 50), pct(gwLat, 99)
	add(Result{Name: "http p50 direct", Value: us(p50d), Unit: "µs"})
	add(Result{Name: "http p50 through warden", Value: us(p50g), Unit: "µs"})
	added := spread(Result{}, addedByRound) // for the rounds' min–max
	added.Name, added.Unit, added.Target, added.Value = "http added p50", "µs", "≤ 100 µs", us(p50g-p50d)
	add(judge(added, added.Value <= 100, "in one process the client, gateway and server share one Go runtime and its garbage collector; the separate-process rows below measure the hop on its own"))
	add(Result{Name: "http added p99", Value: us(p99g - p99d), Unit: "µs"})

	var direct, gwr pairedRuns
	for range rounds {
		direct.add(measureThroughput(ctx, func() mcp.Transport { return httpTransport(upstream) }, workers, perWorker))
		gwr.add(measureThroughput(ctx, func() mcp.Transport { return httpTransport(gw) }, workers, perWorker))
	}
	addThroughput(add, "http", direct, gwr)
	msgs := float64(2 * workers * perWorker * rounds) // a request and a response per call
	add(Result{Name: "allocations per relayed message (http, whole gateway path)",
		Value: (float64(gwr.allocs) - float64(direct.allocs)) / msgs, Unit: "allocs",
		Note: "extra allocations of the gateway run over the direct run, per message relayed; includes warden's HTTP listener and upstream client"})
}

// pairedRuns are the throughput runs of one side, round by round.
type pairedRuns struct {
	tps    []float64 // calls/s
	cpus   []float64 // CPU µs per call
	allocs uint64
}

func (p *pairedRuns) add(tp float64, allocs uint64, cpu time.Duration, calls int) {
	p.tps = append(p.tps, tp)
	p.cpus = append(p.cpus, us(cpu)/float64(calls))
	p.allocs += allocs
}

// addThroughput reports the throughput of both sides, the median of the
// ratios of the rounds run back to back (a round's direct and warden runs
// share the machine's background load, which drifts between rounds), and
// the CPU time per call of each side.
func addThroughput(add func(Result), name string, direct, gw pairedRuns) {
	ratios := make([]float64, len(direct.tps))
	for i := range ratios {
		ratios[i] = gw.tps[i] / direct.tps[i]
	}
	ratio := median(ratios)
	add(Result{Name: name + " throughput direct", Value: median(direct.tps), Unit: "calls/s"})
	add(Result{Name: name + " throughput through warden", Value: median(gw.tps), Unit: "calls/s"})
	add(target(Result{Name: name + " throughput ratio", Value: ratio, Unit: "×", Target: "≥ 0.8"}, ratio >= 0.8))
	who := "the bench process, which runs the client, the server and the gateway"
	if name == "stdio" {
		who = "the bench process (the client) and the server and gateway processes"
	}
	add(Result{Name: name + " CPU per call direct", Value: median(direct.cpus), Unit: "µs"})
	add(Result{Name: name + " CPU per call through warden", Value: median(gw.cpus), Unit: "µs",
		Note: "CPU time, user and system, of " + who + ", per call of the throughput runs (median round). " +
			"On a CPU-bound machine the throughput ratio comes to about direct / through warden; it is steadier than the ratio when other work shares the machine"})
}

// benchStdio compares the go-sdk client against warden demo-server
// directly and through warden gateway --stdio.
func benchStdio(ctx context.Context, add func(Result), rounds, calls, perWorker int) {
	bin := buildWarden()
	defer os.RemoveAll(filepath.Dir(bin))
	root, _ := os.MkdirTemp("", "warden-bench-")
	defer os.RemoveAll(root)
	stdioDirect := func() mcp.Transport {
		return &mcp.CommandTransport{Command: exec.Command(bin, "demo-server", "--root", root)}
	}
	stdioGW := func() mcp.Transport {
		return &mcp.CommandTransport{Command: exec.Command(bin, "gateway", "--stdio", "--log-level", "error", "--", bin, "demo-server", "--root", root)}
	}
	var sd, sg []time.Duration
	for range rounds {
		sd = append(sd, latencies(ctx, stdioDirect(), calls)...)
		sg = append(sg, latencies(ctx, stdioGW(), calls)...)
	}
	add(Result{Name: "stdio p50 direct", Value: us(pct(sd, 50)), Unit: "µs"})
	add(Result{Name: "stdio p50 through warden", Value: us(pct(sg, 50)), Unit: "µs"})
	add(Result{Name: "stdio added p50", Value: us(pct(sg, 50) - pct(sd, 50)), Unit: "µs"})
	add(Result{Name: "stdio added p99", Value: us(pct(sg, 99) - pct(sd, 99)), Unit: "µs"})
	var direct, gw pairedRuns
	for range rounds {
		direct.add(measureThroughput(ctx, stdioDirect, 2, perWorker))
		gw.add(measureThroughput(ctx, stdioGW, 2, perWorker))
	}
	addThroughput(add, "stdio", direct, gw)
}

// writeReports writes results.json and the readable report.
func writeReports(rep *report, out, doc string, rounds, calls, workers, perWorker int) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		log.Fatal(err)
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "results.json"), append(data, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte(markdown(rep, rounds, calls, workers, perWorker)), 0o644); err != nil {
		log.Fatal(err)
	}
}

// rerender writes doc again from out/results.json, with the report's
// current text around the recorded rows.
func rerender(out, doc string, rounds, calls, workers, perWorker int) error {
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(out, "results.json"), err)
	}
	return os.WriteFile(doc, []byte(markdown(&rep, rounds, calls, workers, perWorker)), 0o644)
}

func target(r Result, met bool) Result { r.Met = &met; return r }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func httpTransport(url string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

func connect(ctx context.Context, t mcp.Transport) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	return cs
}

func echo(ctx context.Context, cs *mcp.ClientSession) {
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}}); err != nil {
		log.Fatalf("echo: %v", err)
	}
}

// latencies makes n sequential calls on one session, after a warm-up.
func latencies(ctx context.Context, t mcp.Transport, n int) []time.Duration {
	cs := connect(ctx, t)
	defer cs.Close()
	for range 200 {
		echo(ctx, cs)
	}
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		echo(ctx, cs)
		d[i] = time.Since(start)
	}
	return d
}

// measureThroughput is throughput plus, while it ran, the allocations made in
// this process, the CPU time used by this process and by the child processes
// that ended (stdio servers and gateways: they exit, and are waited for, when
// their sessions close), and the number of calls.
func measureThroughput(ctx context.Context, newT func() mcp.Transport, workers, perWorker int) (tp float64, allocs uint64, cpu time.Duration, calls int) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuWithChildren()
	tp = throughput(ctx, newT, workers, perWorker)
	cpu = cpuWithChildren() - cpu0
	runtime.ReadMemStats(&after)
	return tp, after.Mallocs - before.Mallocs, cpu, workers * perWorker
}

// cpuWithChildren is the CPU time, user and system, of this process and of
// its children that have ended and been waited for.
func cpuWithChildren() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// throughput runs workers sessions making perWorker calls each, concurrently.
func throughput(ctx context.Context, newT func() mcp.Transport, workers, perWorker int) float64 {
	sessions := make([]*mcp.ClientSession, workers)
	for i := range sessions {
		sessions[i] = connect(ctx, newT())
		echo(ctx, sessions[i])
	}
	var wg sync.WaitGroup
	start := time.Now()
	for _, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				echo(ctx, cs)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, cs := range sessions {
		cs.Close()
	}
	return float64(workers*perWorker) / elapsed.Seconds()
}

func listen() net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return ln
}

func serveDemoHTTP() string {
	dir, _ := os.MkdirTemp("", "warden-bench-up-")
	server := demoserver.New(demoserver.Options{Root: dir, Env: func() []string { return nil }})
	ln := listen()
	go serveLabelled(ln, "upstream", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	return "http://" + ln.Addr().String()
}

func serveGateway(upstream string) string {
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{
		Name: "demo", Transport: "http",
		Dial: func(context.Context, bool) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: upstream, Name: "demo"}), nil
		},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	ln := listen()
	go serveLabelled(ln, "warden", g.Handler())
	return "http://" + ln.Addr().String() + "/mcp"
}

// serveLabelled serves h on ln with the profiler label side=side, which every
// goroutine the server starts inherits (connections, sessions, relays, the
// upstream client's connections), so that a CPU profile of the run splits by
// side: `go tool pprof -tagfocus side=warden F`.
func serveLabelled(ln net.Listener, side string, h http.Handler) {
	pprof.Do(context.Background(), pprof.Labels("side", side), func(context.Context) {
		http.Serve(ln, h)
	})
}

func buildWarden() string {
	dir, _ := os.MkdirTemp("", "warden-bench-bin-")
	bin := filepath.Join(dir, "warden")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/warden")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		log.Fatalf("building warden: %v", err)
	}
	return bin
}

// idleRSS starts `warden gateway --config` with one stdio upstream and no
// client, lets it settle, and reads its resident set size.
func idleRSS(bin, root string) (rss, anon float64) {
	cfg := filepath.Join(root, "idle.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("version: 1\ngateway:\n  listen: {addr: \"127.0.0.1:0\"}\n  upstreams:\n    - name: demo\n      command: [%q, demo-server]\n", bin)), 0o644)
	cmd := exec.Command(bin, "gateway", "--config", cfg)
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return -1, -1
	}
	rss, anon = -1, -1
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		}
	}
	return rss, anon
}

func markdown(rep *report, rounds, calls, workers, perWorker int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (bench/main.go); the numbers below are from the last run and also in bench/results.json.\n\n")
	fmt.Fprintf(&b, "Run: %s, %s, %d CPUs. Every row that compares pairs a direct run and a run through warden in the same process, same client (go-sdk), same server (the demo server's `echo` tool), in %d interleaved rounds (direct, warden, direct, warden, …) so that both sides see the same background noise. Latency: percentiles over %d sequential calls per round on one session, after 200 warm-up calls. Throughput: the median round of %d concurrent sessions × %d calls over HTTP keep-alive, and of 2 × %d over stdio. A value followed by (a–b) is the median of the rounds and, in brackets, the lowest and highest round.\n\n",
		rep.Date, rep.Go, rep.CPUs, rounds, calls, workers, perWorker, perWorker)
	accounting := rep.CPUAccounting
	if accounting == "" { // a results.json from before the field
		accounting = "utime + stime from /proc/PID/stat, in 10 ms ticks"
	}
	fmt.Fprintf(&b, "The rows headed \"separate processes\", \"bridge shape\" and \"durable\" run every process on its own (client, relay, upstream) and compare warden with floors (the least a relay or a durable record can cost) and with peers. "+
		"Their configurations run in interleaved rounds whose order rotates, each shape's rounds a multiple of its configurations so that every configuration takes every position equally often; every session makes warm-up calls before the measured ones. "+
		"A relay's CPU is %s, read just before and after the measured calls. A ratio is computed within each round, from the two configurations of that round, and shown as the median of the rounds with their min–max. "+
		"Around every measured window the bench also reads the host: steal and iowait (/proc/stat), the CPU time used by processes outside the bench's own tree (the machine's busy time minus the bench's, its relays', upstreams' and peers'), CPU pressure (/proc/pressure/cpu) and the load average; results.json keeps them per row (`host`). "+
		"A target row gets no verdict, shown as \"noisy host\" (results.json: `verdict`, no `met`), when %s: on 2 shared cores a relay's CPU per call moves with the load around it (how many messages one wake-up carries, how often the Go scheduler spins idle, what the caches hold), so such a run cannot tell the code's cost from the host's.\n\n",
		accounting, noisyThresholds)
	fmt.Fprintf(&b, "| measure | value | target | met |\n|---|---|---|---|\n")
	for _, r := range rep.Results {
		met := ""
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*r.Met]
		} else if r.Verdict != "" {
			met = r.Verdict
		}
		val := strings.TrimSpace(fmt.Sprintf("%.2f %s", r.Value, r.Unit))
		if r.Min != nil && r.Max != nil {
			val += fmt.Sprintf(" (%.2f–%.2f)", *r.Min, *r.Max)
		}
		if math.IsNaN(r.Value) || r.Skipped != "" {
			val = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Name, val, r.Target, met)
	}
	fmt.Fprintf(&b, "\nNotes:\n\n")
	for _, r := range rep.Results {
		note := r.Note
		if r.Skipped != "" {
			note = "not measured in this run: " + r.Skipped
		} else if r.Met != nil && !*r.Met && !strings.HasPrefix(note, "target not met") && !strings.HasPrefix(note, "not met") {
			note = strings.TrimSuffix("target not met; "+note, "; ")
		}
		if note != "" {
			fmt.Fprintf(&b, "- %s: %s.\n", r.Name, note)
		}
	}
	fmt.Fprintf(&b, "- docker/mcp-gateway as a peer: not measured. The Go module proxy refuses github.com/docker/mcp-gateway (403 \"This module version is not available\"), so it cannot be built here.\n")
	fmt.Fprintf(&b, "- HTTP path: warden adds a second HTTP round trip on loopback and SSE framing on both hops. To keep that hop cheap (\"http added p50\") it answers a quick single-request POST in one write (headers, priming event, response, end of stream), keeps upstream connections alive (one POST in one write; a POST stream read to its end so net/http reuses the connection), and relays stdio on the reading goroutine (no hand-off). The answer stays SSE, not application/json, because the MCP conformance suite scores the two differently.\n")
	fmt.Fprintf(&b, "- Zero-trust: Tier 1 validation is the whole check (strict header and claims decoding, signature, INV-1..3 including hashing the arguments) without the consume; the signature check alone is crypto/ed25519 on the same token. Tier 2 validation adds the DPoP proof (ES256, checked against the request and, through ath, the token) and the cnf.jkt binding; its signature checks are Ed25519 on the token plus ES256 on the proof. Each validation ratio times both sides in alternating stretches of about 1 ms and reports medians, so that both see the same background load. Beyond the signatures, validation decodes the header and claims by hand over warden's strict JSON scanner (no reflection; the same acceptance as encoding/json with exact names, checked by fuzzing) and hashes the arguments (a byte scan for large numbers, then JCS, skipped when the arguments are canonical already (sorted keys, no whitespace, integers), as the bench's are; in another key order the transform adds about a tenth of a signature check). Consumption: distinct ids, formatted before the clock starts, one clock read per consume, median of the rounds; memory with 8 goroutines (it is CPU-bound: more goroutines only add scheduling), SQLite and Redis with 64 goroutines (each session waits for its own durable commit, and group commit serves the waiting sessions together). SQLite is durable: WAL, synchronous=FULL, one fsync per group commit, acknowledged only after it; Redis runs on a unix socket with AOF everysec. The tools/call rows pre-issue one token per call, so issuing is not timed.\n")
	fmt.Fprintf(&b, "- stdio runs include the child process's own work; the added latency is warden's extra hop (one more process, two more pipe crossings).\n")
	fmt.Fprintf(&b, "- Throughput ratios are CPU-bound on this 2-core machine: client, warden and server share both cores, so a ratio below 1 is mostly warden's own CPU per message (two HTTP stacks and SSE framing on the HTTP path; \"allocations per relayed message\") rather than waiting. The median of the per-round ratios is reported, and the CPU per call rows show the same cost with less noise; rows measured round by round show the rounds' min–max beside the median.\n")
	fmt.Fprintf(&b, "- Where the time goes (`go run ./bench -cpuprofile F -memprofile F`): garbage collection and allocation dominate; most allocations on the HTTP path are net/http's (header parsing and cloning, one server and one client request per call through warden) and go-sdk's own, with warden's decoder and relay a small share (the decoder allocates once per message).\n")
	return b.String()
}
