package main

// Scale-out measurements (issue 9): tools/call with Tier 1 tokens through
// one warden on SQLite, and through one, two and three wardens sharing one
// redis-server, measured in interleaved rounds of one run; then a bounded
// soak of one gateway on each store in turn (memory, SQLite, Redis), which
// watches goroutines and the live heap and reports each store's latencies.
//
//	bench clients ──round robin──▶ warden gateway ×1..3 ──▶ demo server
//	 (this process)                (child processes,        (this process,
//	                                127.0.0.1 ports)          HTTP, loopback)
//	                                      │
//	                                      ▼
//	                               redis-server (unix socket, AOF everysec)
//
// Every process this section starts is recorded in a scaleProcs and stopped
// by its pid when the section ends, on failure too: nothing here calls
// log.Fatal while a child runs; errors come back to benchScale, which stops
// the children first.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// soakSkew is the clock skew the soak's gateways allow (zero_trust.skew).
const soakSkew = 5 * time.Second

var soakFor = flag.Duration("soak", 5*time.Minute, "how long the scale section's soak runs in all, split evenly between the stores (memory, SQLite, Redis); 0 skips it")

const (
	// scaleSessions is the concurrency of every throughput configuration,
	// divisible by 1, 2 and 3 so each instance gets the same share.
	scaleSessions = 12
	// soakSessions make the soak's steady load; each reconnects every
	// soakReconnect calls, so session setup and teardown are soaked too.
	soakSessions  = 8
	soakReconnect = 500
	// A soak value is flat when its end is at most start + max(10% of
	// start, margin).
	soakGoroutineMargin = 20
	soakHeapMarginMB    = 2.0
)

// scaleConfig is one throughput configuration: instances serve the calls.
type scaleConfig struct {
	name string
	urls []string
}

// benchScale measures the scale-out configurations and the soak. A signal
// cancels the run, so that every process it started is stopped and every
// file removed before it exits.
func benchScale(ctx context.Context, add func(Result), rounds, perWorker int) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	procs := &scaleProcs{}
	err := runScale(ctx, add, procs, rounds, perWorker)
	procs.stopAll()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		log.Fatalf("scale: %v", err)
	}
}

func runScale(ctx context.Context, add func(Result), procs *scaleProcs, rounds, perWorker int) error {
	dir, err := os.MkdirTemp("", "warden-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer procs.stopAll() // before dir goes
	bin := buildWarden()  // before any child starts: it exits on failure
	defer os.RemoveAll(filepath.Dir(bin))
	dataDir := filepath.Join(dir, "data")
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		return err
	}
	upstream, stopUp, err := serveScaleDemo(filepath.Join(dir, "root"))
	if err != nil {
		return err
	}
	defer stopUp()

	redisURL, err := procs.startRedis(ctx, dir)
	if err != nil {
		return err
	}
	ztSQLite := fmt.Sprintf("{data_dir: %q, subject: alice, skew: 5s}", dataDir)
	ztRedis := fmt.Sprintf("{data_dir: %q, subject: alice, skew: 5s, store: redis, redis_url: %q}", dataDir, redisURL)

	sqlite, err := procs.startGateway(bin, dir, "sqlite", ztSQLite, upstream)
	if err != nil {
		return err
	}
	configs := []scaleConfig{{"1 warden on SQLite", []string{sqlite.url}}}
	if redisURL != "" {
		var urls []string
		for i := range 3 {
			gw, err := procs.startGateway(bin, dir, fmt.Sprintf("redis%d", i+1), ztRedis, upstream)
			if err != nil {
				return err
			}
			urls = append(urls, gw.url)
		}
		configs = append(configs,
			scaleConfig{"1 warden on Redis", urls[:1]},
			scaleConfig{"2 wardens on one Redis", urls[:2]},
			scaleConfig{"3 wardens on one Redis", urls})
	}
	// Tokens that may predate the Redis epoch, begun before now, are
	// refused: iat has whole seconds, and the issuer's clock may be ahead
	// by the skew (store.IssuedBefore).
	pastEpoch(time.Now(), soakSkew)

	// A round's tokens are issued before it starts and live 30 s: keep
	// rounds to a few seconds.
	perSession := min(max(perWorker/4, 1), 1000)
	rates := make([][]float64, len(configs))
	lats := make([][]time.Duration, len(configs))
	for round := range max(rounds, 1) {
		// Interleaved, and in a rotated order each round, so every
		// configuration sees the same background noise and positions.
		for k := range configs {
			i := (k + round) % len(configs)
			rate, lat, err := scaleRound(ctx, ring, configs[i].urls, perSession)
			if err != nil {
				return fmt.Errorf("%s: %w", configs[i].name, err)
			}
			rates[i], lats[i] = append(rates[i], rate), append(lats[i], lat...)
		}
	}
	method := fmt.Sprintf("Tier 1 token per call, pre-issued with the gateways' key ring (issuing not timed); %d go-sdk sessions round-robin over the instances × %d calls, median of %d interleaved rounds; p99 over every call of every round; "+
		"each warden is a `warden gateway --config` child process on its own 127.0.0.1 port in front of the same demo server (served over HTTP by the bench process); "+
		"all processes (clients, demo server, wardens, redis-server) share this machine's %d CPUs, so more instances cannot add CPU",
		scaleSessions, perSession, max(rounds, 1), runtime.NumCPU())
	tps := make([]float64, len(configs))
	for i, c := range configs {
		tps[i] = median(rates[i])
		r := Result{Name: "scale: tools/call, " + c.name, Value: tps[i], Unit: "calls/s"}
		if i == 0 {
			r.Note = method
		}
		add(r)
		add(Result{Name: "scale: tools/call p99, " + c.name, Value: us(pct(lats[i], 99)), Unit: "µs"})
	}
	if redisURL == "" {
		add(Result{Name: "scale: tools/call, 1–3 wardens on one Redis", Note: "not measured: no redis-server (run make deps)"})
	} else {
		add(Result{Name: "scale: 3 wardens / 1 warden on Redis", Value: tps[3] / tps[1], Unit: "×",
			Note: fmt.Sprintf("one redis-server (AOF everysec, unix socket) shared by all instances; the %d CPUs are already saturated by one instance and its clients, "+
				"so this ratio shows what spreading the same load over more processes costs (about 1 means nothing), not capacity added by scaling out", runtime.NumCPU())})
	}

	// The soak has the CPUs to itself.
	procs.stopGateways()
	if *soakFor <= 0 {
		return nil
	}
	return soak(ctx, add, ring, dataDir, redisURL, upstream, *soakFor)
}

// scaleRound makes perSession calls on each of scaleSessions sessions,
// spread round-robin over urls, each call with its own token issued before
// the clock starts, and returns the rate and every call's latency.
func scaleRound(ctx context.Context, ring *zerotrust.KeyRing, urls []string, perSession int) (float64, []time.Duration, error) {
	tokens := make([][]string, scaleSessions)
	for s := range tokens {
		for range perSession + 1 { // one for the warm-up call
			tok, err := scaleToken(ring)
			if err != nil {
				return 0, nil, err
			}
			tokens[s] = append(tokens[s], tok)
		}
	}
	hc := scaleHTTPClient()
	sessions := make([]*mcp.ClientSession, scaleSessions)
	defer func() {
		for _, cs := range sessions {
			if cs != nil {
				cs.Close()
			}
		}
		hc.CloseIdleConnections()
	}()
	for s := range sessions {
		var err error
		if sessions[s], err = scaleConnect(ctx, hc, urls[s%len(urls)]); err != nil {
			return 0, nil, err
		}
		if err := scaleCall(ctx, sessions[s], tokens[s][0]); err != nil {
			return 0, nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lat := make([][]time.Duration, scaleSessions)
	errs := make([]error, scaleSessions)
	var wg sync.WaitGroup
	start := time.Now()
	for s, cs := range sessions {
		wg.Go(func() {
			d := make([]time.Duration, 0, perSession)
			t := time.Now()
			for _, tok := range tokens[s][1:] {
				if err := scaleCall(ctx, cs, tok); err != nil {
					errs[s] = err
					cancel()
					return
				}
				now := time.Now()
				d, t = append(d, now.Sub(t)), now
			}
			lat[s] = d
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs { // the first; the others are mostly its cancellation
		if err != nil {
			return 0, nil, err
		}
	}
	return float64(scaleSessions*perSession) / elapsed.Seconds(), slices.Concat(lat...), nil
}

// soakStore is one store the soak runs a gateway on.
type soakStore struct {
	name      string // in the rows' names: memory, SQLite, Redis
	zeroTrust string // the gateway's zero_trust section
}

// soak runs one gateway on each store in turn, memory, SQLite and Redis
// (when there is a redis-server), each for an equal share of d, and reports
// for each its call rate, latencies, and whether goroutines and the live
// heap stayed flat.
func soak(ctx context.Context, add func(Result), ring *zerotrust.KeyRing, dataDir, redisURL, upstream string, d time.Duration) error {
	stores := []soakStore{
		{"memory", fmt.Sprintf("{data_dir: %q, subject: alice, skew: 5s, store: memory}", dataDir)},
		{"SQLite", fmt.Sprintf("{data_dir: %q, subject: alice, skew: 5s, store: sqlite}", dataDir)},
	}
	if redisURL != "" {
		stores = append(stores, soakStore{"Redis", fmt.Sprintf("{data_dir: %q, subject: alice, skew: 5s, store: redis, redis_url: %q}", dataDir, redisURL)})
	}
	each := d / time.Duration(len(stores))
	for i, st := range stores {
		r, err := soakOne(ctx, ring, st, upstream, each)
		if err != nil {
			return fmt.Errorf("soak on %s: %w", st.name, err)
		}
		r.report(add, st.name, i == 0)
	}
	if redisURL == "" {
		add(Result{Name: "soak: tools/call rate, Redis", Note: "not measured: no redis-server (run make deps)"})
	}
	return nil
}

// soakResult is what one store's soak measured.
type soakResult struct {
	after    []soakSample // the samples after warm-up
	hist     latencyHist
	elapsed  time.Duration
	interval time.Duration
	warm     time.Duration
}

// soakOne runs soakSessions sessions of steady, unpaced load against one
// gateway on st for d, sampling this process's goroutines and live heap.
// warden's /metrics has no Go runtime metrics, so this gateway runs in this
// process (assemble.FromConfig, gateway.New) and the samples count the whole
// process: gateway, clients and demo server, whose own share is steady.
func soakOne(ctx context.Context, ring *zerotrust.KeyRing, st soakStore, upstream string, d time.Duration) (*soakResult, error) {
	url, stop, err := serveSoakGateway(st, upstream)
	if err != nil {
		return nil, err
	}
	defer stop()
	// A memory store's epoch is its creation: tokens that may predate it
	// are refused (iat has whole seconds, the issuer's clock may be ahead
	// by the skew).
	pastEpoch(time.Now(), soakSkew)

	// Samples every interval; the warm-up is a fifth of the soak, but at
	// least a token's lifetime and the store's skew (as long as that
	// leaves half the soak), at most a minute: pools, caches and the GC's
	// pacing settle, and a store that keeps each consumed id until its
	// token expires (memory) has reached the size it keeps.
	warm := min(time.Minute, max(d/5, min(zerotrust.MaxTTL+soakSkew+5*time.Second, d/2)))
	res := &soakResult{interval: min(max(d/30, time.Second), 5*time.Second), warm: warm}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	samples := make([]soakSample, 0, int(d/res.interval)+2)
	sampled := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(res.interval)
		defer tick.Stop()
		for {
			samples = append(samples, readSoakSample(time.Since(begin)))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	hists := make([]latencyHist, soakSessions)
	errs := make([]error, soakSessions)
	var wg sync.WaitGroup
	for w := range soakSessions {
		wg.Go(func() {
			if errs[w] = soakWorker(ctx, ring, url, &hists[w]); errs[w] != nil {
				cancel() // the others stop too
			}
		})
	}
	wg.Wait()
	<-sampled
	res.elapsed = time.Since(begin)
	if err := parent.Err(); err != nil {
		return nil, err // interrupted
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range hists {
		res.hist.merge(&hists[i])
	}
	for _, s := range samples {
		if s.at >= res.warm {
			res.after = append(res.after, s)
		}
	}
	if len(res.after) < 6 {
		return nil, fmt.Errorf("%d samples after warm-up; run it for longer (-soak is split between the stores)", len(res.after))
	}
	return res, nil
}

// serveSoakGateway serves, in this process on a 127.0.0.1 port, a gateway
// whose zero-trust state is on st and which requires a token for echo. It
// returns its MCP URL and the function that stops it.
func serveSoakGateway(st soakStore, upstream string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `version: 1
gateway:
  listen: {addr: %q}
  zero_trust: %s
  upstreams: [{name: demo, url: %q, require_token: [echo]}]
`, ln.Addr().String(), st.zeroTrust, upstream), "soak.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	var opts gateway.Options
	if err == nil {
		opts, err = assemble.FromConfig(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	}
	var g *gateway.Gateway
	if err == nil {
		g, err = gateway.New(opts)
	}
	if err != nil {
		ln.Close()
		return "", nil, fmt.Errorf("gateway: %w", err)
	}
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/mcp", func() { srv.Close(); g.Close() }, nil
}

// report adds the rows of one store's soak, named "soak: <measure>,
// <store>"; the first store's rows carry the method.
func (r *soakResult) report(add func(Result), store string, first bool) {
	goroutines := func(s soakSample) float64 { return s.goroutines }
	heap := func(s soakSample) float64 { return s.heapMB }
	g0, g1 := medianOf(r.after[:3], goroutines), medianOf(r.after[len(r.after)-3:], goroutines)
	h0, h1 := medianOf(r.after[:3], heap), medianOf(r.after[len(r.after)-3:], heap)
	name := func(measure string) string { return "soak: " + measure + ", " + store }

	rate := Result{Name: name("tools/call rate"), Value: float64(r.hist.total()) / r.elapsed.Seconds(), Unit: "calls/s",
		Note: fmt.Sprintf("sampled every %s for %s; start = median of the 3 samples from %s (warm-up), end = median of the last 3",
			r.interval, r.elapsed.Round(time.Second), r.warm.Round(time.Second))}
	if first {
		rate.Note = fmt.Sprintf("one gateway per store, memory, SQLite and Redis (AOF everysec) in turn, each for an equal share of -soak, run in the bench process, since warden's /metrics has no Go runtime metrics, so the counts are the whole process's (gateway, %d go-sdk client sessions, demo server); "+
			"unpaced load, each call with a fresh Tier 1 token issued outside its timing, each session reconnecting every %d calls; "+
			"warm-up = a fifth of the store's share, but at least a token's lifetime plus the skew (while that leaves half the share), at most 1 min; slope by least squares over the samples after warm-up; "+
			"flat = end ≤ start + max(10%% of start, %d goroutines or %.0f MB); ", soakSessions, soakReconnect, soakGoroutineMargin, soakHeapMarginMB) + rate.Note
	}
	add(rate)
	add(Result{Name: name("tools/call p50"), Value: us(r.hist.pct(50)), Unit: "µs"})
	add(Result{Name: name("tools/call p99"), Value: us(r.hist.pct(99)), Unit: "µs"})
	add(Result{Name: name("goroutines start"), Value: g0, Unit: "goroutines"})
	add(target(Result{Name: name("goroutines end"), Value: g1, Unit: "goroutines", Target: "flat"}, g1 <= g0+max(0.1*g0, soakGoroutineMargin)))
	add(Result{Name: name("goroutines slope"), Value: slope(r.after, goroutines), Unit: "goroutines/min"})
	heapStart := Result{Name: name("live heap start"), Value: h0, Unit: "MB"}
	if first {
		heapStart.Note = "heap in use measured as the live heap the last GC marked (runtime/metrics /gc/heap/live:bytes), which does not swing with the GC cycle as HeapInuse does; latencies are counted in fixed 1% buckets so the harness itself does not grow the heap"
	}
	add(heapStart)
	add(target(Result{Name: name("live heap end"), Value: h1, Unit: "MB", Target: "flat"}, h1 <= h0+max(0.1*h0, soakHeapMarginMB)))
	add(Result{Name: name("live heap slope"), Value: slope(r.after, heap), Unit: "MB/min"})
}

// soakWorker makes calls until ctx ends, on a session it replaces every
// soakReconnect calls. A call cut short by the end of the soak is not an
// error and is not counted.
func soakWorker(ctx context.Context, ring *zerotrust.KeyRing, url string, h *latencyHist) error {
	hc := scaleHTTPClient() // one per worker, as one client process would keep its pool
	defer hc.CloseIdleConnections()
	for ctx.Err() == nil {
		cs, err := scaleConnect(ctx, hc, url)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for range soakReconnect {
			tok, err := scaleToken(ring)
			if err != nil {
				cs.Close()
				return err
			}
			start := time.Now()
			err = scaleCall(ctx, cs, tok)
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				cs.Close()
				return err
			}
			h.add(time.Since(start))
		}
		cs.Close()
	}
	return nil
}

type soakSample struct {
	at         time.Duration // since the soak began
	goroutines float64
	heapMB     float64
}

func readSoakSample(at time.Duration) soakSample {
	m := []metrics.Sample{{Name: "/sched/goroutines:goroutines"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return soakSample{at: at, goroutines: float64(m[0].Value.Uint64()), heapMB: float64(m[1].Value.Uint64()) / (1 << 20)}
}

func medianOf(s []soakSample, v func(soakSample) float64) float64 {
	vals := make([]float64, len(s))
	for i := range s {
		vals[i] = v(s[i])
	}
	return median(vals)
}

// slope is the least-squares slope of v over time, per minute.
func slope(s []soakSample, v func(soakSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, p := range s {
		x, y := p.at.Minutes(), v(p)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if den := n*sxx - sx*sx; den != 0 {
		return (n*sxy - sx*sy) / den
	}
	return 0
}

// latencyHist counts durations in buckets 1% wide (bucket i holds up to
// 1.01^(i+1) ns; the last, about 24 s, holds everything longer), so a soak's
// percentiles take a fixed amount of memory.
type latencyHist [2400]uint64

var logBucket = math.Log(1.01)

func (h *latencyHist) add(d time.Duration) {
	i := int(math.Log(float64(max(d, 1))) / logBucket)
	h[min(max(i, 0), len(h)-1)]++
}

func (h *latencyHist) merge(o *latencyHist) {
	for i := range h {
		h[i] += o[i]
	}
}

func (h *latencyHist) total() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// pct is the upper bound of the bucket holding the p-th percentile.
func (h *latencyHist) pct(p int) time.Duration {
	rank := (h.total()*uint64(p) + 99) / 100
	var n uint64
	for i, c := range h {
		if n += c; n >= max(rank, 1) {
			return time.Duration(math.Pow(1.01, float64(i+1)))
		}
	}
	return 0
}

func scaleHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

func scaleToken(ring *zerotrust.KeyRing) (string, error) {
	tok, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "echo", Arguments: []byte(`{"message":"bench"}`)})
	return tok, err
}

// scaleConnect is connect returning its error, so that the caller can stop
// its child processes before exiting. The session's requests go through
// hc, whose idle connections its owner closes: a transport dropped with
// idle keep-alive connections leaves them open, with a goroutine each on
// both sides, for as long as the server keeps them (warden's listener sets
// no idle timeout).
func scaleConnect(ctx context.Context, hc *http.Client, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return cs, nil
}

func scaleCall(ctx context.Context, cs *mcp.ClientSession, token string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"},
		Meta: mcp.Meta{gateway.MetaTokenKey: token}})
	if err == nil && res.IsError {
		err = fmt.Errorf("tool error: %v", res.Content)
	}
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	return nil
}

// serveScaleDemo serves the demo server over HTTP on loopback.
func serveScaleDemo(root string) (string, func(), error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, err
	}
	server := demoserver.New(demoserver.Options{Root: root, Env: func() []string { return nil }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	return "http://" + ln.Addr().String(), func() { ln.Close() }, nil
}

// scaleProcs are the child processes this section started.
type scaleProcs struct {
	mu    sync.Mutex
	procs []*scaleProc // guarded by mu
}

type scaleProc struct {
	name    string
	gateway bool
	url     string // a gateway's MCP endpoint, once it answers
	cmd     *exec.Cmd
	stderr  bytes.Buffer  // read only after exited is closed
	exited  chan struct{} // closed when the process has been waited for
}

func (p *scaleProcs) start(name string, gateway bool, cmd *exec.Cmd) (*scaleProc, error) {
	proc := &scaleProc{name: name, gateway: gateway, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &proc.stderr
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { cmd.Wait(); close(proc.exited) }()
	p.procs = append(p.procs, proc)
	return proc, nil
}

// stop ends one process by its pid: SIGTERM, then SIGKILL after 10 s.
func (proc *scaleProc) stop() {
	proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-proc.exited:
	case <-time.After(10 * time.Second):
		proc.cmd.Process.Kill()
		<-proc.exited
	}
}

// stopGateways stops the gateways and keeps redis-server.
func (p *scaleProcs) stopGateways() {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.procs[:0]
	for _, proc := range p.procs {
		if proc.gateway {
			proc.stop()
		} else {
			kept = append(kept, proc)
		}
	}
	p.procs = kept
}

// stopAll stops every process, the latest started first.
func (p *scaleProcs) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proc := range slices.Backward(p.procs) {
		proc.stop()
	}
	p.procs = nil
}

// startRedis starts redis-server on a unix socket in dir with AOF
// everysec, waits until it answers, and begins its epoch. It returns ""
// when no redis-server is installed.
func (p *scaleProcs) startRedis(ctx context.Context, dir string) (string, error) {
	bin := os.Getenv("WARDEN_REDIS_SERVER")
	if bin == "" {
		bin, _ = exec.LookPath("redis-server")
	}
	if bin == "" {
		return "", nil
	}
	sock := filepath.Join(dir, "redis.sock")
	proc, err := p.start("redis-server", false, exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--dir", dir))
	if err != nil {
		return "", err
	}
	url := "unix://" + sock
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-proc.exited:
			return "", fmt.Errorf("redis-server exited: %s", proc.stderr.String())
		default:
		}
		rd, err := store.OpenRedis(ctx, url)
		if err != nil {
			continue
		}
		// Begin the epoch now, as the gateways' first consumption would:
		// tokens issued before it are refused.
		_, _, err = rd.ConsumeSince(ctx, "bench-scale", "epoch", time.Now().Add(time.Minute))
		rd.Close()
		return url, err
	}
	return "", errors.New("redis-server did not answer within 10 s")
}

// startGateway runs `warden gateway --config` with the given zero_trust
// section on a free 127.0.0.1 port, requiring a token for echo, and waits
// until it answers /healthz.
func (p *scaleProcs) startGateway(bin, dir, name, zeroTrust, upstream string) (*scaleProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `version: 1
gateway:
  listen: {addr: %q}
  zero_trust: %s
  upstreams: [{name: demo, url: %q, require_token: [echo]}]
`, addr, zeroTrust, upstream), 0o600); err != nil {
		return nil, err
	}
	proc, err := p.start("warden "+name, true, exec.Command(bin, "gateway", "--config", cfg, "--log-level", "error"))
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			proc.url = "http://" + addr + "/mcp"
			return proc, nil
		}
		select {
		case <-proc.exited:
			return nil, fmt.Errorf("warden %s exited: %s", name, proc.stderr.String())
		default:
		}
	}
	return nil, fmt.Errorf("warden %s did not answer /healthz within 20 s", name)
}
