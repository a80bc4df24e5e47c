//go:build integration

package gateway_test

// Issue 9, the gateway's own faults, with `warden gateway` run as a process
// and its audit log on SQLite: SIGKILL during load loses no record of a call
// that succeeded, and a log that cannot grow (RLIMIT_FSIZE, as a full disk
// would do) refuses calls instead of running them unaudited.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/testenv"
)

// gatewayChild is a `warden gateway --config` process this test started.
type gatewayChild struct {
	cmd    *exec.Cmd
	addr   string // the listener, 127.0.0.1:port
	stderr *childOutput
	exited chan struct{}
}

// childOutput keeps what a child process writes; a test may read it
// while the child runs.
type childOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *childOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *childOutput) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startGatewayChild runs prefix (a wrapper such as prlimit, or nothing),
// then `warden gateway --config cfg` with WARDEN_DATA_DIR=dataDir, and waits
// until it answers /healthz. The process is stopped at cleanup.
func startGatewayChild(t *testing.T, cfg, addr, dataDir string, prefix ...string) *gatewayChild {
	t.Helper()
	args := append(prefix, wardenBin, "gateway", "--config", cfg, "--log-level", "error")
	gw := &gatewayChild{cmd: exec.Command(args[0], args[1:]...), addr: addr, stderr: &childOutput{}, exited: make(chan struct{})}
	gw.cmd.Env = append(os.Environ(), "WARDEN_DATA_DIR="+dataDir)
	gw.cmd.Stderr = gw.stderr
	if err := gw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { gw.cmd.Wait(); close(gw.exited) }()
	t.Cleanup(func() { gw.stop(t) })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return gw
		}
		select {
		case <-gw.exited:
			t.Fatalf("the gateway exited: %s", gw.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not come up: %s", gw.stderr)
		}
	}
}

// kill ends the gateway with SIGKILL, by pid, and waits until it is gone.
func (gw *gatewayChild) kill() {
	gw.cmd.Process.Signal(syscall.SIGKILL)
	<-gw.exited
}

// stop asks the gateway to shut down (SIGTERM), and kills it if it does
// not within 10 s.
func (gw *gatewayChild) stop(t *testing.T) {
	select {
	case <-gw.exited:
		return
	default:
	}
	gw.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-gw.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the gateway did not stop on SIGTERM: %s", gw.stderr)
		gw.kill()
	}
}

// crashConfig writes a gateway configuration with the SQLite audit log at
// its default place, DATA_DIR/audit.db, in front of upstream.
func crashConfig(t *testing.T, addr, upstream string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `version: 1
gateway:
  listen: {addr: %q}
  audit: {backend: sqlite}
  upstreams: [{name: demo, url: %s}]
`, addr, upstream), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// callLog maps the tools/call requests one client session sent to their
// ids, by the call's "message" argument, from go-sdk's LoggingTransport.
type callLog struct {
	mu  sync.Mutex
	ids map[string]string // message → raw request id
}

func (l *callLog) Write(p []byte) (int, error) {
	dir, body, ok := strings.Cut(strings.TrimSpace(string(p)), ": ")
	if !ok || dir != "write" {
		return len(p), nil
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct{ Message string } `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(body), &m) == nil && m.Method == "tools/call" {
		l.mu.Lock()
		l.ids[m.Params.Arguments.Message] = string(m.ID)
		l.mu.Unlock()
	}
	return len(p), nil
}

func (l *callLog) id(message string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[message]
}

// exportAudit runs `warden audit verify` and `warden audit export` on the
// log at path, fails the test unless it verifies, and returns its records.
func exportAudit(t *testing.T, ctx context.Context, path string) []audit.Record {
	t.Helper()
	out, err := exec.CommandContext(ctx, wardenBin, "audit", "verify", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": ok, ") {
		t.Fatalf("warden audit verify: %v\n%s", err, out)
	}
	export, err := exec.CommandContext(ctx, wardenBin, "audit", "export", path).Output()
	if err != nil {
		t.Fatalf("warden audit export: %v", err)
	}
	var records []audit.Record
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("export line %s: %v", sc.Bytes(), err)
		}
		records = append(records, r)
	}
	return records
}

// auditKey finds a record by session, request id and direction.
type auditKey struct{ session, id, direction string }

func indexAudit(records []audit.Record) map[auditKey]audit.Record {
	m := make(map[auditKey]audit.Record, len(records))
	for _, r := range records {
		if r.RequestID != "" {
			m[auditKey{r.Session, r.RequestID, r.Direction}] = r
		}
	}
	return m
}

// TestGatewayKilledMidLoad: `warden gateway` is killed with SIGKILL while
// thirty-two callers on eight sessions call it, then restarted on the same
// data directory, five times over. The log verifies, continues its chain,
// and holds the request and the answer of every call that returned success
// to its client.
func TestGatewayKilledMidLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	up, _ := demoUpstream(t, false)
	dataDir := t.TempDir()
	addr := testenv.FreeLoopbackAddr(t)
	cfg := crashConfig(t, addr, up)

	var successes []loadSuccess
	const rounds = 5
	for range rounds {
		gw := startGatewayChild(t, cfg, addr, dataDir)
		successes = append(successes, loadUntilKilled(t, ctx, gw, 150)...)
	}

	// Restarted once more, it appends to the same chain.
	gw := startGatewayChild(t, cfg, addr, dataDir)
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, "2025-11-25")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "after the restarts"}}); err != nil {
		t.Fatalf("a call after the restarts: %v", err)
	}
	cs.Close()
	gw.stop(t)

	records := exportAudit(t, ctx, filepath.Join(dataDir, "audit.db"))
	byKey := indexAudit(records)
	for _, s := range successes {
		id := s.log.id(s.message)
		req, okReq := byKey[auditKey{s.session, id, "client"}]
		_, okAns := byKey[auditKey{s.session, id, "upstream"}]
		switch {
		case id == "":
			t.Errorf("call %s: the client's log has no request id for it", s.message)
		case !okReq || req.Tool != "echo" || req.Decision != audit.Allow:
			t.Errorf("call %s (session %s, id %s) succeeded, but its request has no audit record (%+v)", s.message, s.session, id, req)
		case !okAns:
			t.Errorf("call %s (session %s, id %s) succeeded, but the answer it got has no audit record", s.message, s.session, id)
		}
	}
	if last := records[len(records)-1]; last.Session != cs.ID() {
		t.Errorf("the log's last record is of session %q, want the call after the restarts (%s)", last.Session, cs.ID())
	}
	t.Logf("%d calls succeeded over %d kills; %d records", len(successes), rounds, len(records))
}

// loadSuccess is a call that returned success to its client.
type loadSuccess struct {
	session, message string
	log              *callLog // its session's requests
}

// loadUntilKilled has four callers on each of eight sessions call gw's echo
// tool, each until a call fails, and kills gw with SIGKILL once killAfter
// calls have succeeded. It returns the calls that succeeded.
func loadUntilKilled(t *testing.T, ctx context.Context, gw *gatewayChild, killAfter int) []loadSuccess {
	t.Helper()
	const sessions, callers = 8, 4
	var (
		mu        sync.Mutex
		successes []loadSuccess
		killed    bool  // set just before the kill
		early     error // a call that failed before the kill
		wg        sync.WaitGroup
	)
	// Every session is connected before any call starts, so that the kill
	// (after killAfter successes) cannot come before a session exists.
	type session struct {
		cs  *mcp.ClientSession
		log *callLog
	}
	var all []session
	for range sessions {
		log := &callLog{ids: map[string]string{}}
		client := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: "http://" + gw.addr + "/mcp", MaxRetries: -1}
		cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: tr, Writer: log},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		all = append(all, session{cs, log})
	}
	for _, s := range all {
		cs, log := s.cs, s.log
		for c := range callers {
			wg.Go(func() {
				for n := 0; ; n++ {
					msg := fmt.Sprintf("%s-c%d-n%d", cs.ID(), c, n)
					cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
					res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
					ccancel()
					if err == nil && res.IsError {
						err = fmt.Errorf("tool error: %v", res.Content)
					}
					mu.Lock()
					if err != nil {
						if !killed && early == nil {
							early = fmt.Errorf("call %s: %w", msg, err)
						}
						mu.Unlock()
						return // the gateway is gone
					}
					successes = append(successes, loadSuccess{cs.ID(), msg, log})
					kill := len(successes) == killAfter
					if kill {
						killed = true
					}
					mu.Unlock()
					if kill {
						gw.kill() // mid-load, by pid
					}
				}
			})
		}
	}
	wg.Wait()
	if early != nil {
		t.Fatalf("a call failed before the gateway was killed: %v", early)
	}
	return successes
}

// TestAuditDiskFull runs `warden gateway` with a file size limit
// (RLIMIT_FSIZE, through prlimit), so that its audit log can grow only so
// far, as on a full disk. The Go runtime ignores SIGXFSZ, so the write fails
// with EFBIG and the gateway lives on. Calls succeed until the log is full;
// from then on each is refused (stage audit, rule write) and never reaches
// the upstream; every call the upstream ran is on record.
func TestAuditDiskFull(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		if testenv.RequireDeps() {
			t.Fatal("prlimit (util-linux) not found")
		}
		t.Skip("prlimit (util-linux) not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// The upstream keeps the calls it runs, by their message.
	var (
		mu  sync.Mutex
		ran = map[string]bool{}
	)
	server := demoserver.New(demoserver.Options{Root: t.TempDir()})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				var args struct{ Message string }
				json.Unmarshal(p.Arguments, &args)
				mu.Lock()
				ran[args.Message] = true
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(up.Close)
	hasRun := func(msg string) (bool, int) { mu.Lock(); defer mu.Unlock(); return ran[msg], len(ran) }

	// The log exists before the limit applies; it may then grow by room.
	dataDir := t.TempDir()
	logPath := filepath.Join(dataDir, "audit.db")
	l, err := audit.Open(ctx, audit.KindSQLite, logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	fi, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	const room = 128 << 10
	addr := testenv.FreeLoopbackAddr(t)
	limit := fi.Size() + room
	gw := startGatewayChild(t, crashConfig(t, addr, up.URL), addr, dataDir,
		prlimit, "--fsize="+strconv.FormatInt(limit, 10), "--")

	calls := &callLog{ids: map[string]string{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "full", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, Writer: calls},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	const afterFull = 20 // calls made once the log is full
	succeeded, refused, full := 0, 0, -1
	for n := 0; n < 5000 && (full < 0 || n < full+afterFull); n++ {
		msg := fmt.Sprintf("call-%d", n)
		_, ranBefore := hasRun(msg)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err == nil && !res.IsError {
			if full >= 0 {
				t.Fatalf("call %d succeeded after the log was full (call %d refused)", n, full)
			}
			succeeded++
			continue
		}
		var werr *sdkjsonrpc.Error
		var data struct{ Stage, Rule string }
		if !errors.As(err, &werr) || json.Unmarshal(werr.Data, &data) != nil || werr.Code != -32001 || data.Stage != "audit" || data.Rule != "write" {
			t.Fatalf("call %d: %v %+v, want a refusal of stage audit, rule write", n, err, res)
		}
		if full < 0 {
			full = n
		}
		// The request's record could be written but not its answer's: the
		// upstream ran the call, and the answer is withheld.
		if strings.Contains(werr.Message, "withheld") {
			continue
		}
		refused++
		if did, ranAfter := hasRun(msg); did || ranAfter != ranBefore {
			t.Fatalf("call %d was refused for want of its audit record, but the upstream ran it", n)
		}
	}
	switch {
	case full < 0:
		t.Fatal("the log never filled up: the size limit did not apply")
	case succeeded == 0:
		t.Fatal("no call succeeded before the log was full: the test proved nothing")
	case refused < afterFull-1:
		t.Errorf("%d calls refused after the log was full, want at least %d", refused, afterFull-1)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil {
		t.Fatalf("the gateway died: %v: %s", err, gw.stderr)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cs.Close()
	gw.stop(t)

	// Every call the upstream ran is on record.
	byKey := indexAudit(exportAudit(t, ctx, logPath))
	mu.Lock()
	defer mu.Unlock()
	if len(ran) < succeeded {
		t.Fatalf("the upstream ran %d calls, but %d succeeded", len(ran), succeeded)
	}
	for msg := range ran {
		id := calls.id(msg)
		if r, ok := byKey[auditKey{cs.ID(), id, "client"}]; !ok || r.Tool != "echo" || r.Decision != audit.Allow {
			t.Errorf("the upstream ran %s (id %s), which has no audit record", msg, id)
		}
	}
	t.Logf("%d calls succeeded, then %d refused; files limited to %d bytes", succeeded, refused, limit)
}
