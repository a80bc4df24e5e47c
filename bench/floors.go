package main

// Floors and peers (issue 22): warden against the least a relay can do and
// against two other stdio→HTTP bridges, every process on its own, CPU read
// per process from /proc, in interleaved rounds (the order rotates every
// round, so every configuration sees the same background load).
//
//	HTTP relay       bench client ──▶ relay ──HTTP──▶ demo-server --http
//	(8 sessions)     (this process)   floor: httputil.ReverseProxy (bench -floor http)
//	                                  warden gateway: default, telemetry, all recording
//	stdio relay      bench client ──▶ relay ──stdio──▶ demo-server
//	(2 sessions)                      floor: byte pipe (bench -floor stdio)
//	                                  warden gateway --stdio
//	bridge           bench client ──HTTP──▶ bridge ──stdio──▶ demo-server (one per session)
//	(8 sessions)                      warden gateway, npm mcp-proxy, npm supergateway
//
// Every process is started through a scaleProcs and stopped by its pid when
// the section ends, on failure too; nothing here calls log.Fatal while a
// child runs.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayRun is one load run through one configuration.
type relayRun struct {
	tp    float64 // calls/s
	relay float64 // CPU µs per call of the relay's own processes
	p50   time.Duration
	host  hostNoise // the host's activity while the calls ran
}

// hostOf adds up the host's activity over runs.
func hostOf(runs map[string][]relayRun) HostNoise {
	var h hostNoise
	for _, rs := range runs {
		for _, r := range rs {
			h.merge(r.host)
		}
	}
	return h.noise()
}

// logRun prints one run, so that a reader can see what a round's position,
// the host's noise and the run's own cost do to each other.
func logRun(shape string, round, pos int, name string, r relayRun) {
	h := r.host.noise()
	psi := "-"
	if h.CPUPressurePct != nil {
		psi = fmt.Sprintf("%.0f%%", *h.CPUPressurePct)
	}
	log.Printf("floors: %s round %d #%d %-12s %8.1f µs/call %7.0f calls/s  others %4.1f%% steal %.1f%% pressure %s",
		shape, round, pos, name, r.relay, r.tp, h.OthersCPUPct, h.StealPct, psi)
}

// balanced is the number of rounds to run of n configurations: at least
// rounds, and, when that is n or more, a multiple of n, so that the rotating
// order puts every configuration at every position equally often (the
// first of a round can pay for what the previous one left in the caches).
func balanced(rounds, n int) int {
	if n == 0 || rounds < n {
		return rounds
	}
	return (rounds + n - 1) / n * n
}

// httpRelay is one configuration of the HTTP shapes: a URL to load and the
// pids whose CPU is the relay's (none for direct).
type httpRelay struct {
	name string
	url  string
	pids []int
}

func benchFloors(ctx context.Context, add func(Result), rounds, workers, perWorker, calls int) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	procs := &scaleProcs{}
	start := time.Now()
	err := runFloors(ctx, add, procs, rounds, workers, perWorker, calls)
	procs.stopAll()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		log.Fatalf("floors: %v", err)
	}
	log.Printf("floors: section took %s", time.Since(start).Round(time.Second))
}

func runFloors(ctx context.Context, add func(Result), procs *scaleProcs, rounds, workers, perWorker, calls int) error {
	bin := buildWarden() // before any child starts or any folder is made: it exits on failure
	defer os.RemoveAll(filepath.Dir(bin))
	dir, err := os.MkdirTemp("", "warden-bench-floors-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer procs.stopAll() // before dir goes
	self, err := os.Executable()
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return err
	}
	// Smaller runs than the one-process rows': the section runs 12
	// configurations on a 2-core machine within make bench's time budget.
	// CPU is read in nanoseconds, so a short run is read exactly; what
	// varies is the host, round to round, and more rounds of fewer calls
	// give the median more to stand on. Every run of the stdio and bridge
	// shapes starts processes (relays, a server per session), which a
	// loaded host makes slow, so those keep fewer rounds. With the
	// defaults: HTTP 5 rounds of 8 × 150 calls, stdio 4 of 2 × 1200,
	// bridge 3 of 8 × 125, each after a tenth as many warm-up calls, where
	// there were 3 rounds of 8 × 250, 2 × 2000 and 8 × 125.
	rounds = max(1, min(rounds, 5))
	if err := floorsHTTP(ctx, add, procs, bin, self, dir, root, rounds, workers, perWorker*3/20, calls/10); err != nil {
		return err
	}
	if err := floorsStdio(ctx, add, bin, self, root, min(rounds, 4), perWorker*6/5); err != nil {
		return err
	}
	if err := floorsBridge(ctx, add, procs, bin, dir, root, min(rounds, 3), workers, perWorker/8); err != nil {
		return err
	}
	// The durable rows (durable.go) run in this process, 3 rounds as
	// before; the host's activity over them is recorded as for the others.
	var rows []Result
	s0, err := readHost()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := floorsDurable(ctx, func(r Result) { rows = append(rows, r) }, dir, min(rounds, 3)); err != nil {
		return err
	}
	s1, err := readHost()
	if err != nil {
		return err
	}
	var h hostNoise
	h.add(s0, s1, time.Since(start))
	hadd := withHost(add, h.noise())
	for _, r := range rows {
		hadd(r)
	}
	return nil
}

// floorsHTTP loads the demo server directly, through the floor relay and
// through warden with no recording, with spans + OCSF + metrics, and with
// all recording (durable audit too).
func floorsHTTP(ctx context.Context, add func(Result), procs *scaleProcs, bin, self, dir, root string,
	rounds, workers, perWorker, calls int) error {
	upAddr, err := freeAddr()
	if err != nil {
		return err
	}
	_, err = procs.startListening(ctx, "demo-server", upAddr,
		exec.Command(bin, "demo-server", "--http", upAddr, "--root", root))
	if err != nil {
		return err
	}
	upURL := "http://" + upAddr + "/mcp"
	relays := []httpRelay{{name: "direct", url: upURL}}
	floorAddr, err := freeAddr()
	if err != nil {
		return err
	}
	floor, err := procs.startListening(ctx, "floor http", floorAddr,
		exec.Command(self, "-floor", "http", "-listen", floorAddr, "-upstream", "http://"+upAddr))
	if err != nil {
		return err
	}
	relays = append(relays, httpRelay{"floor", "http://" + floorAddr + "/mcp", []int{floor.cmd.Process.Pid}})
	telemetry := func(name string) string {
		return fmt.Sprintf("telemetry: {metrics: true, spans: {exporter: jsonl, path: %q}, ocsf: {exporter: jsonl, path: %q}}\n",
			filepath.Join(dir, name+"-spans.jsonl"), filepath.Join(dir, name+"-ocsf.jsonl"))
	}
	for _, c := range []struct{ name, extra, top string }{
		{"warden", "", ""},
		{"telemetry", "", telemetry("telemetry")},
		{"recorded", fmt.Sprintf("  audit: {path: %q}\n", filepath.Join(dir, "audit.log")), telemetry("recorded")},
	} {
		url, proc, err := procs.startWarden(ctx, bin, dir, c.name, fmt.Sprintf("  upstreams: [{name: demo, url: %q}]\n", upURL)+c.extra, c.top)
		if err != nil {
			return err
		}
		relays = append(relays, httpRelay{c.name, url, []int{proc.cmd.Process.Pid}})
	}
	runs := make(map[string][]relayRun)
	for round := range balanced(rounds, len(relays)) {
		for k := range relays {
			r := relays[(k+round)%len(relays)]
			lat := calls // the added p50 rows need direct, floor and warden only
			if r.name == "telemetry" || r.name == "recorded" {
				lat = 0
			}
			run, err := httpLoad(ctx, r, workers, perWorker, lat)
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			logRun("http", round, k, r.name, run)
			runs[r.name] = append(runs[r.name], run)
		}
	}
	add = withHost(add, hostOf(runs))
	per := func(name string, f func(relayRun) float64) []float64 {
		var v []float64
		for _, r := range runs[name] {
			v = append(v, f(r))
		}
		return v
	}
	vs := func(a, b string, f func(x, y relayRun) float64) []float64 {
		var v []float64
		for i := range runs[a] {
			v = append(v, f(runs[a][i], runs[b][i]))
		}
		return v
	}
	cpu := func(r relayRun) float64 { return r.relay }
	tp := func(r relayRun) float64 { return r.tp }
	added := func(x, y relayRun) float64 { return us(x.p50 - y.p50) }
	ratio := func(x, y relayRun) float64 { return x.relay / y.relay }
	const sep = "separate processes: "
	add(spread(Result{Name: sep + "http p50 direct", Unit: "µs",
		Note: fmt.Sprintf("client, relay and demo-server --http each a process of its own; %d sequential calls on one session per round, after 100 warm-up calls; throughput: %d sessions × %d calls per round", calls, workers, perWorker)},
		per("direct", func(r relayRun) float64 { return us(r.p50) })))
	add(spread(Result{Name: sep + "http added p50, floor relay", Unit: "µs"}, vs("floor", "direct", added)))
	add(spread(Result{Name: sep + "http added p50, warden", Unit: "µs"}, vs("warden", "direct", added)))
	names := map[string]string{
		"direct":    "direct",
		"floor":     "floor HTTP relay (httputil.ReverseProxy)",
		"warden":    "warden, default",
		"telemetry": "warden, spans + OCSF + metrics",
		"recorded":  "warden, audit + spans + OCSF + metrics",
	}
	for _, r := range relays {
		add(spread(Result{Name: sep + "throughput, " + names[r.name], Unit: "calls/s"}, per(r.name, tp)))
	}
	for _, r := range relays[1:] {
		res := Result{Name: sep + "relay CPU per call, " + names[r.name], Unit: "µs"}
		if r.name == "floor" {
			res.Note = "CPU of the relay's process over the calls of the throughput run, sessions already open, read from " + cpuAccounting()
		}
		add(spread(res, per(r.name, cpu)))
	}
	def := vs("warden", "floor", ratio)
	add(judge(spread(Result{Name: sep + "warden default relay CPU ÷ floor HTTP relay's", Unit: "×", Target: "≤ 1.0"}, def),
		median(def) <= 1.0, "warden decodes every message strictly, runs its stages and re-frames SSE, where the floor copies bytes"))
	rec := vs("recorded", "floor", ratio)
	add(judge(spread(Result{Name: sep + "warden audit + spans + OCSF + metrics relay CPU ÷ floor HTTP relay's", Unit: "×", Target: "≤ 1.4"}, rec),
		median(rec) <= 1.4, "the recording's share is the rows 'relay CPU per call, warden, spans + OCSF + metrics' and 'durable audit CPU per record' above the default relay"))
	tel := vs("telemetry", "warden", func(x, y relayRun) float64 { return x.relay - y.relay })
	add(judge(spread(Result{Name: sep + "spans + OCSF + metrics, relay CPU added per call", Unit: "µs", Target: "≤ 30 µs",
		Note: "telemetry's relay CPU per call minus the default's, round by round; spans and OCSF to JSONL files, as `telemetry:` does by default"}, tel),
		median(tel) <= 30, "spans, OCSF events and metrics are built and encoded in the gateway process for every call"))
	onOff := vs("recorded", "warden", func(x, y relayRun) float64 { return x.tp / y.tp })
	add(judge(spread(Result{Name: sep + fmt.Sprintf("all recording on, throughput ÷ recording off (%d sessions)", workers), Unit: "×", Target: "≥ 0.80"}, onOff),
		median(onOff) >= 0.80, "every call waits for its audit records' durable writes, and the recording's CPU shares the 2 cores with client and upstream"))
	return nil
}

// httpLoad runs workers sessions × perWorker calls against r, reading the
// relay's CPU around the calls, then latency over calls sequential calls.
func httpLoad(ctx context.Context, r httpRelay, workers, perWorker, calls int) (relayRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var run relayRun
	var err error
	run, err = loadSessions(ctx, func() (mcp.Transport, *exec.Cmd) { return httpTransport(r.url), nil }, r.pids, workers, perWorker)
	if err != nil || calls == 0 {
		return run, err
	}
	cs, err := connectE(ctx, httpTransport(r.url))
	if err != nil {
		return run, err
	}
	defer cs.Close()
	d := make([]time.Duration, calls)
	for i := range 100 + calls {
		start := time.Now()
		if err := echoE(ctx, cs); err != nil {
			return run, err
		}
		if i >= 100 {
			d[i-100] = time.Since(start)
		}
	}
	run.p50 = pct(d, 50)
	return run, nil
}

// loadSessions opens workers sessions with newT, makes a tenth of perWorker
// calls on each at once to warm them up (a new process grows its heap and
// faults its pages in), then perWorker calls on each at once. The CPU per
// call is that of pids plus, for sessions whose transport runs a command,
// those commands' processes, read (procCPU) around the measured calls, and
// the host's activity is sampled around them too.
func loadSessions(ctx context.Context, newT func() (mcp.Transport, *exec.Cmd), pids []int, workers, perWorker int) (relayRun, error) {
	// Sessions open and close all at once, outside the measurement: a
	// bridge starts a server process for each, which takes a while.
	sessions := make([]*mcp.ClientSession, workers)
	defer func() {
		var wg sync.WaitGroup
		for _, cs := range sessions {
			if cs != nil {
				wg.Go(func() { cs.Close() })
			}
		}
		wg.Wait()
	}()
	cmds := make([]*exec.Cmd, workers)
	openErrs := make([]error, workers)
	var opening sync.WaitGroup
	for i := range sessions {
		opening.Go(func() {
			t, cmd := newT()
			cs, err := connectE(ctx, t)
			if err == nil {
				sessions[i], cmds[i] = cs, cmd
				err = echoE(ctx, cs)
			}
			openErrs[i] = err
		})
	}
	opening.Wait()
	if err := errors.Join(openErrs...); err != nil {
		return relayRun{}, err
	}
	pids = slices.Clone(pids)
	for _, cmd := range cmds {
		if cmd != nil {
			pids = append(pids, cmd.Process.Pid)
		}
	}
	calls := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for _, cs := range sessions {
			wg.Go(func() {
				for range n {
					if err := echoE(ctx, cs); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	if err := calls(max(1, perWorker/10)); err != nil {
		return relayRun{}, err
	}
	s0, err := readHost()
	if err != nil {
		return relayRun{}, err
	}
	c0, err := procsCPU(pids)
	if err != nil {
		return relayRun{}, err
	}
	start := time.Now()
	if err := calls(perWorker); err != nil {
		return relayRun{}, err
	}
	elapsed := time.Since(start)
	c1, err := procsCPU(pids)
	if err != nil {
		return relayRun{}, err
	}
	s1, err := readHost()
	if err != nil {
		return relayRun{}, err
	}
	n := float64(workers * perWorker)
	run := relayRun{tp: n / elapsed.Seconds(), relay: us(c1-c0) / n}
	run.host.add(s0, s1, elapsed)
	return run, nil
}

// floorsStdio compares warden gateway --stdio with the byte-pipe floor, both
// in front of warden demo-server over stdio.
func floorsStdio(ctx context.Context, add func(Result), bin, self, root string, rounds, perWorker int) error {
	server := []string{bin, "demo-server", "--root", root}
	relays := []struct {
		name string
		argv []string
	}{
		{"floor", append([]string{self, "-floor", "stdio", "--"}, server...)},
		{"warden", append([]string{bin, "gateway", "--stdio", "--log-level", "error", "--"}, server...)},
	}
	const sessions = 2
	runs := make(map[string][]relayRun)
	for round := range balanced(rounds, len(relays)) {
		for k := range relays {
			r := relays[(k+round)%len(relays)]
			newT := func() (mcp.Transport, *exec.Cmd) {
				cmd := exec.Command(r.argv[0], r.argv[1:]...)
				return &mcp.CommandTransport{Command: cmd}, cmd
			}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			run, err := loadSessions(lctx, newT, nil, sessions, perWorker)
			cancel()
			if err != nil {
				return fmt.Errorf("stdio %s: %w", r.name, err)
			}
			logRun("stdio", round, k, r.name, run)
			runs[r.name] = append(runs[r.name], run)
		}
	}
	add = withHost(add, hostOf(runs))
	var fl, wa, ratio, ftp, wtp []float64
	for i := range runs["floor"] {
		f, w := runs["floor"][i], runs["warden"][i]
		fl, wa, ratio = append(fl, f.relay), append(wa, w.relay), append(ratio, w.relay/f.relay)
		ftp, wtp = append(ftp, f.tp), append(wtp, w.tp)
	}
	const sep = "separate processes: "
	add(spread(Result{Name: sep + "stdio throughput, byte-pipe relay", Unit: "calls/s",
		Note: fmt.Sprintf("%d sessions × %d calls, each session its own relay process and demo-server", sessions, perWorker)}, ftp))
	add(spread(Result{Name: sep + "stdio throughput, warden gateway --stdio", Unit: "calls/s"}, wtp))
	add(spread(Result{Name: sep + "stdio relay CPU per call, byte-pipe relay", Unit: "µs",
		Note: "one read(2) and one write(2) per chunk each way (no splice); the relay processes' own CPU, not demo-server's"}, fl))
	add(spread(Result{Name: sep + "stdio relay CPU per call, warden gateway --stdio", Unit: "µs"}, wa))
	add(judge(spread(Result{Name: sep + "warden stdio relay CPU ÷ byte-pipe relay CPU", Unit: "×", Target: "≤ 1.3"}, ratio),
		median(ratio) <= 1.3, "warden reads every message whole, decodes it strictly and runs its stages before writing it on; the pipe moves bytes"))
	return nil
}

// freeAddr is a free 127.0.0.1 port, for a child to listen on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startListening starts cmd and waits until addr accepts connections.
func (p *scaleProcs) startListening(ctx context.Context, name, addr string, cmd *exec.Cmd) (*scaleProc, error) {
	proc, err := p.start(name, false, cmd)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-proc.exited:
			return nil, fmt.Errorf("%s exited: %s", name, tail(proc.stderr.String()))
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return proc, nil
		}
	}
	return nil, fmt.Errorf("%s did not listen on %s within 30 s", name, addr)
}

// startWarden runs `warden gateway --config` with the given gateway fields
// (indented, after listen) and top-level sections, and returns its MCP URL.
func (p *scaleProcs) startWarden(ctx context.Context, bin, dir, name, gatewayFields, top string) (string, *scaleProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, name+".yaml")
	body := fmt.Sprintf("version: 1\ngateway:\n  listen: {addr: %q}\n%s%s", addr, gatewayFields, top)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return "", nil, err
	}
	proc, err := p.startListening(ctx, "warden "+name, addr, exec.Command(bin, "gateway", "--config", cfg, "--log-level", "error"))
	if err != nil {
		return "", nil, err
	}
	return "http://" + addr + "/mcp", proc, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}

func connectE(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return cs, nil
}

func echoE(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}})
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if res.IsError {
		return errors.New("echo: the tool answered with an error")
	}
	return nil
}
