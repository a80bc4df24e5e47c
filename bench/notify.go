package main

// Notifications and idle sessions (issue 16): how fast warden relays an
// upstream's notifications to its client, what a flood of them does to
// another client's calls, and what an idle session costs in memory.
//
//	flood client ──► warden gateway ──► flood server (go-sdk, HTTP): one
//	                 (child process)     tools/call, N notifications/progress
//	echo client ───►        │       ──► demo server (go-sdk, HTTP): echo
//
// The servers and clients run in this process; warden runs as the process
// users run (`warden gateway --config`), or in this process with
// -notify-inproc, so that -cpuprofile sees it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
)

var (
	notifyInproc = flag.Bool("notify-inproc", false, "notify section: run the gateway in this process (for -cpuprofile) instead of as a child process")
	notifyCount  = flag.Int("notify-count", 20000, "notify section: notifications per flood")
)

const (
	// notifyRateTarget is the relay rate warden must reach (issue 16).
	notifyRateTarget = 20000.0
	// idleSessions is how many sessions the RSS rows open.
	idleSessions = 200
	// idleChildren is how many the stdio row opens: each is a child process.
	idleChildren = 20
	// floodCalls is how many echo calls the p99 rows make, with and
	// without the flood, in each of the rounds.
	floodCalls = 1000
)

func benchNotify(ctx context.Context, add func(Result), rounds int) {
	procs := &scaleProcs{}
	err := runNotify(ctx, add, procs, rounds)
	procs.stopAll()
	if err != nil {
		log.Fatalf("notify: %v", err)
	}
}

func runNotify(ctx context.Context, add func(Result), procs *scaleProcs, rounds int) error {
	dir, err := os.MkdirTemp("", "warden-bench-notify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer procs.stopAll() // before dir goes
	bin := buildWarden()
	defer os.RemoveAll(filepath.Dir(bin))

	flood, stopFlood, err := serveFlood()
	if err != nil {
		return err
	}
	defer stopFlood()
	demo, stopDemo, err := serveScaleDemo(filepath.Join(dir, "root"))
	if err != nil {
		return err
	}
	defer stopDemo()

	yaml := fmt.Sprintf("upstreams:\n    - {name: flood, url: %q}\n    - {name: demo, url: %q}\n", flood, demo)
	base, err := startNotifyGateway(procs, bin, dir, "notify", yaml, *notifyInproc)
	if err != nil {
		return err
	}

	// The relay rate: direct and through warden, interleaved.
	var direct, through []float64
	lost := 0
	for range rounds {
		r, l, err := floodRate(ctx, flood, *notifyCount)
		if err == nil && l > 0 {
			err = fmt.Errorf("%d of %d notifications did not arrive", l, *notifyCount)
		}
		if err != nil {
			return fmt.Errorf("direct flood: %w", err)
		}
		direct = append(direct, r)
		if r, l, err = floodRate(ctx, base+"/mcp/flood", *notifyCount); err != nil {
			return fmt.Errorf("flood through warden: %w", err)
		}
		through = append(through, r)
		lost += l
	}
	add(Result{Name: "notifications relayed direct", Value: median(direct), Unit: "/s",
		Note: fmt.Sprintf("one tools/call whose server sends %d notifications/progress on the call's SSE stream, as fast as go-sdk sends them; the client counts them; median of %d rounds", *notifyCount, rounds)})
	rate := median(through)
	add(target(Result{Name: "notifications relayed through warden", Value: rate, Unit: "/s", Target: "≥ 20000 /s",
		Note: "the same flood through `warden gateway` (HTTP upstream, HTTP client): notifications that arrived, per second"}, rate >= notifyRateTarget))
	add(target(Result{Name: "notifications lost through warden", Value: float64(lost), Unit: "", Target: "0",
		Note: fmt.Sprintf("of %d sent to a client that reads its stream as fast as it can", rounds**notifyCount)}, lost == 0))

	// Another client's calls, on another upstream, with and without the
	// flood, interleaved.
	var quiet, flooded []time.Duration
	for range rounds {
		d, err := echoLatencies(ctx, base+"/mcp/demo", floodCalls)
		if err != nil {
			return err
		}
		quiet = append(quiet, d...)
		d, err = echoDuringFlood(ctx, base, floodCalls)
		if err != nil {
			return err
		}
		flooded = append(flooded, d...)
	}
	q, f := us(pct(quiet, 99)), us(pct(flooded, 99))
	add(Result{Name: "p99 of a client's calls, no flood", Value: q, Unit: "µs",
		Note: "sequential echo calls through warden to the demo upstream"})
	add(target(Result{Name: "p99 of a client's calls while another upstream floods", Value: f, Unit: "µs", Target: "≤ 5 × no flood",
		Note: "the same calls while another client's call to the flood upstream receives notifications without pause, through the same warden; both share this machine's CPUs with the flood server"}, f <= 5*q))

	// RSS per idle session.
	for _, up := range []struct {
		name, yaml string
		n          int
	}{
		{"HTTP upstream", fmt.Sprintf("upstreams:\n    - {name: demo, url: %q}\n", demo), idleSessions},
		{"stdio upstream", fmt.Sprintf("upstreams:\n    - {name: demo, command: [%q, demo-server, --root, %q]}\n", bin, filepath.Join(dir, "root")), idleChildren},
	} {
		per, err := rssPerSession(ctx, procs, bin, dir, up.yaml, up.n)
		if err != nil {
			return fmt.Errorf("idle sessions, %s: %w", up.name, err)
		}
		add(target(Result{Name: "RSS per idle session, " + up.name, Value: per, Unit: "KB", Target: "≤ 256 KB",
			Note: fmt.Sprintf("`warden gateway`'s VmRSS after opening %d initialized sessions and idling, minus before, divided by %d; a stdio upstream's child processes are not counted (they are processes of their own)", up.n, up.n)}, per <= 256))
	}
	return nil
}

// startNotifyGateway runs warden with the given upstreams section on a
// free 127.0.0.1 port and returns its base URL; inproc serves it from this
// process instead.
func startNotifyGateway(procs *scaleProcs, bin, dir, name, upstreams string, inproc bool) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	yaml := fmt.Sprintf("version: 1\ngateway:\n  listen: {addr: %q}\n  audit: {path: %q}\n  %s", addr, filepath.Join(dir, name+"-audit.db"), upstreams)
	if inproc {
		cfg, err := config.Parse([]byte(yaml), name+".yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			return "", err
		}
		opts, err := assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			return "", err
		}
		g, err := gateway.New(opts)
		if err != nil {
			return "", err
		}
		go serveLabelled(ln, "warden", g.Handler())
		return "http://" + addr, nil
	}
	ln.Close()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return "", err
	}
	proc, err := procs.start("warden "+name, true, exec.Command(bin, "gateway", "--config", path, "--log-level", "error"))
	if err != nil {
		return "", err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return "http://" + addr, nil
		}
		select {
		case <-proc.exited:
			return "", fmt.Errorf("warden %s exited: %s", name, proc.stderr.String())
		default:
		}
	}
	return "", fmt.Errorf("warden %s did not answer /healthz within 20 s", name)
}

// serveFlood serves an MCP server over streamable HTTP that answers a
// tools/call with an SSE stream of count notifications/progress, then the
// result. It is written by hand, its events buffered and flushed every
// 64 KB, so that it sends far faster than warden can relay: the rate
// measured is warden's (the direct row shows the server's and client's).
func serveFlood() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go serveLabelled(ln, "upstream", http.HandlerFunc(floodHandler))
	return "http://" + ln.Addr().String(), func() { ln.Close() }, nil
}

func floodHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct {
				Count int `json:"count"`
			} `json:"arguments"`
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Mcp-Session-Id", "flood")
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch req.Method {
	case "initialize":
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}]}`
	default:
		result = `{"content":[]}`
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b := bufio.NewWriterSize(w, 64<<10)
	if req.Method == "tools/call" && req.Params.Meta.ProgressToken != nil {
		for i := 1; i <= req.Params.Arguments.Count; i++ {
			fmt.Fprintf(b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d}}\n\n",
				req.Params.Meta.ProgressToken, i)
		}
	}
	fmt.Fprintf(b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", req.ID, result)
	b.Flush()
}

// floodSession is a client session spoken over plain HTTP, which counts
// the notifications that come on a call's SSE stream without decoding them.
type floodSession struct {
	url, id string
	client  *http.Client
}

func newFloodSession(ctx context.Context, url string) (*floodSession, error) {
	s := &floodSession{url: url, client: &http.Client{Transport: &http.Transport{}}}
	if _, _, err := s.post(ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-flood","version":"1"}}}`); err != nil {
		return nil, err
	}
	if _, _, err := s.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	return s, nil
}

// flood asks for n notifications and returns how many came before the
// answer.
func (s *floodSession) flood(ctx context.Context, n int) (notes int, err error) {
	notes, answered, err := s.post(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"count":%d},"_meta":{"progressToken":"flood"}}}`, n))
	if err == nil && !answered {
		err = errors.New("the call's stream ended without its answer")
	}
	return notes, err
}

func (s *floodSession) post(ctx context.Context, body string) (notes int, answered bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(resp.Body)
		return 0, false, fmt.Errorf("%s: HTTP %d: %s", body, resp.StatusCode, data)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	return countSSE(resp.Body)
}

// countSSE reads an SSE stream of JSON-RPC messages to its end and counts
// its notifications; answered says whether a response came too.
func countSSE(r io.Reader) (notes int, answered bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		switch {
		case len(data) == 0: // a priming event
		case bytes.Contains(data, []byte(`"method":"notifications/`)):
			notes++
		case bytes.Contains(data, []byte(`"id":`)):
			answered = true
		}
	}
	return notes, answered, sc.Err()
}

// floodRate has the server at url send n notifications to one call and
// returns how many arrived per second, and how many did not arrive.
func floodRate(ctx context.Context, url string, n int) (rate float64, lost int, err error) {
	s, err := newFloodSession(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	got, err := s.flood(ctx, n)
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	return float64(got) / elapsed.Seconds(), n - got, nil
}

// echoLatencies makes n sequential echo calls on a new session at url.
func echoLatencies(ctx context.Context, url string, n int) ([]time.Duration, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-echo", Version: "1"}, nil)
	cs, err := c.Connect(ctx, httpTransport(url), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	call := func() error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}})
		return err
	}
	for range 50 {
		if err := call(); err != nil {
			return nil, err
		}
	}
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		if err := call(); err != nil {
			return nil, err
		}
		d[i] = time.Since(start)
	}
	return d, nil
}

// echoDuringFlood measures echo calls on the demo upstream while the flood
// upstream floods another client, without pause: a flood call follows
// another until the echo calls are done.
func echoDuringFlood(ctx context.Context, base string, n int) ([]time.Duration, error) {
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	fs, err := newFloodSession(ctx, base+"/mcp/flood")
	if err != nil {
		return nil, err
	}
	var flooding sync.WaitGroup
	var floodErr error
	flooding.Add(1)
	go func() {
		defer flooding.Done()
		for fctx.Err() == nil {
			if _, err := fs.flood(fctx, 5000); err != nil && fctx.Err() == nil {
				floodErr = err
				return
			}
		}
	}()
	d, err := echoLatencies(ctx, base+"/mcp/demo", n)
	stop()
	flooding.Wait()
	if err == nil && floodErr != nil {
		err = fmt.Errorf("flood: %w", floodErr)
	}
	return d, err
}

// rssPerSession starts warden with the given upstreams, opens n sessions
// (initialize, initialized), and returns the growth of its RSS per
// session, in KB.
func rssPerSession(ctx context.Context, procs *scaleProcs, bin, dir, upstreams string, n int) (float64, error) {
	base, err := startNotifyGateway(procs, bin, dir, "idle", upstreams, false)
	if err != nil {
		return 0, err
	}
	defer procs.stopGateways()
	pid := procs.procs[len(procs.procs)-1].cmd.Process.Pid
	// One session first, so that what every session shares (connection
	// pools, the first child's start) is in the baseline.
	first, err := openIdle(ctx, base)
	if err != nil {
		return 0, err
	}
	defer first.Close()
	time.Sleep(500 * time.Millisecond)
	before, err := readRSS(pid)
	if err != nil {
		return 0, err
	}
	sessions := make([]*mcp.ClientSession, 0, n)
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	for range n {
		cs, err := openIdle(ctx, base)
		if err != nil {
			return 0, err
		}
		sessions = append(sessions, cs)
	}
	time.Sleep(time.Second) // idle
	after, err := readRSS(pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

func openIdle(ctx context.Context, base string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-idle", Version: "1"}, nil)
	return c.Connect(ctx, httpTransport(base+"/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// readRSS returns the resident set size of process pid, in KB.
func readRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return statusKB(string(status), "VmRSS")
}

// statusKB reads a field of /proc/PID/status given in kB ("VmRSS:	1234 kB").
func statusKB(status, field string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: want a number of kB, got %q", field, strings.TrimSpace(rest))
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, errors.New(field + ": not in the status")
}
