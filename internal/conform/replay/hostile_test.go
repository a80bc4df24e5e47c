package replay_test

// Hostile targets: servers that sleep, die, babble or half answer. Each is
// replayed through the real command (`warden conform replay --target …`),
// and none of them may read "blocked": they have defended nothing. The
// command exits 6 (inconclusive) unless a probe reproduced (1).
//
// The stdio servers are this test binary started again with the argument
// hostileArg (TestMain runs the server instead of the tests); the HTTP ones
// are httptest servers on 127.0.0.1.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/cli"
)

const hostileArg = "conform-hostile-mcp"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == hostileArg {
		os.Exit(hostileStdio(os.Args[2]))
	}
	os.Exit(m.Run())
}

// hostileStdio is an MCP server over stdio that misbehaves as mode says.
func hostileStdio(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	reply := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	switch mode {
	case "exit":
		return 0
	case "crash":
		return 2
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // a notification, or the ambiguous frame some decoders refuse
		}
		init := req.Method == "initialize"
		initResult := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`
		switch mode {
		case "sleep":
			// never answers
		case "exit-after-initialize":
			if !init {
				return 0
			}
			reply(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, initResult)
		case "garbage":
			reply("this is not JSON at all <html>")
		case "half":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"te`, req.ID)
			out.Flush()
			return 0
		case "wrong-id":
			reply(`{"jsonrpc":"2.0","id":"not-%s","result":%s}`, bytes.Trim(req.ID, `"`), initResult)
		case "error-everything":
			// One unrelated code for every request, initialize included.
			reply(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
		case "refuse-all-but-initialize":
			// A working handshake, then one server-defined code for every
			// request, ping included: it refuses everything, so nothing in
			// particular.
			if init {
				reply(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, initResult)
				continue
			}
			reply(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"no"}}`, req.ID)
		case "internal-error":
			// A working handshake, then the server fails every request.
			if init {
				reply(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, initResult)
				continue
			}
			reply(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"internal error: panic in handler"}}`, req.ID)
		default:
			fmt.Fprintln(os.Stderr, "unknown mode", mode)
			return 2
		}
	}
	return 0
}

// runReplay runs `warden conform replay` with args and returns the exit
// code, stdout and stderr.
func runReplay(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := &cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := cli.Run(ctx, append([]string{"conform", "replay"}, args...), env)
	return code, out.String(), errb.String()
}

type replayDoc struct {
	Reports []struct {
		Target       string
		BehindWarden bool `json:"behind_warden"`
		Results      []struct{ Property, Outcome, Evidence string }
	}
}

// hostileOutcomes replays target (in JSON) and returns the exit code and
// every property's outcome, keyed "plain/P" or "warden/P".
func hostileOutcomes(t *testing.T, target string, args ...string) (int, map[string]string, map[string]string) {
	t.Helper()
	code, out, errs := runReplay(t, append([]string{"--target", target, "--format", "json", "--timeout", "400ms"}, args...)...)
	var doc replayDoc
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&doc); err != nil {
		t.Fatalf("exit %d, output not JSON (%v):\n%s\n%s", code, err, out, errs)
	}
	got, why := map[string]string{}, map[string]string{}
	for _, r := range doc.Reports {
		side := "plain"
		if r.BehindWarden {
			side = "warden"
		}
		for _, res := range r.Results {
			got[side+"/"+res.Property], why[side+"/"+res.Property] = res.Outcome, res.Evidence
		}
	}
	if len(got) == 0 {
		t.Fatalf("exit %d, no results:\n%s\n%s", code, out, errs)
	}
	return code, got, why
}

// noFlattery fails on every outcome that credits a hostile target with a
// defence, and on an exit code other than want.
func noFlattery(t *testing.T, code, want int, got, why map[string]string) {
	t.Helper()
	for p, o := range got {
		if o == "blocked" {
			t.Errorf("%s: blocked (%s): a target that %s defended nothing", p, why[p], t.Name())
		}
	}
	if code != want {
		t.Errorf("exit %d, want %d; outcomes %v", code, want, got)
	}
}

func stdioTarget(t *testing.T, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t") {
		t.Skipf("test binary path %q has white space", exe)
	}
	return "stdio:" + exe + " " + hostileArg + " " + mode
}

// TestHostileStdio: MCP servers over stdio that misbehave. The credential
// variable is named so that the identity probe starts them too.
func TestHostileStdio(t *testing.T) {
	for _, mode := range []string{"sleep", "exit", "crash", "exit-after-initialize", "garbage", "half",
		"wrong-id", "error-everything", "refuse-all-but-initialize", "internal-error"} {
		t.Run(mode, func(t *testing.T) {
			code, got, why := hostileOutcomes(t, stdioTarget(t, mode), "--credential-env", "CONFORM_TEST_CREDENTIAL")
			noFlattery(t, code, cli.ExitPartial, got, why)
			for _, p := range []string{"SL_lifecycle", "P4_prompt_integrity", "P1_identity", "P5_consent", "WF_wire"} {
				if got["plain/"+p] != "inconclusive" {
					t.Errorf("%s: %s (%s), want inconclusive", p, got["plain/"+p], why["plain/"+p])
				}
			}
		})
	}
}

// hostileHTTP is an MCP server over streamable HTTP that answers every
// POST as mode says.
func hostileHTTP(t *testing.T, mode string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		switch mode {
		case "500":
			http.Error(w, "internal server error", http.StatusInternalServerError)
		case "404":
			http.NotFound(w, r)
		case "401":
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case "reset":
			// A response whose body is cut off: the length promised is
			// never sent, and the connection is dropped.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "400")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"proto`))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "sse-silent":
			// An event stream that is opened and never sends an event.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestHostileHTTP: MCP servers over streamable HTTP that fail, refuse
// everything, cut the body, or open a stream and say nothing.
func TestHostileHTTP(t *testing.T) {
	for _, mode := range []string{"500", "404", "401", "reset", "sse-silent"} {
		t.Run(mode, func(t *testing.T) {
			code, got, why := hostileOutcomes(t, hostileHTTP(t, mode))
			noFlattery(t, code, cli.ExitPartial, got, why)
			for _, p := range []string{"SL_lifecycle", "P1_identity", "P5_consent", "WF_wire"} {
				if got["plain/"+p] != "inconclusive" {
					t.Errorf("%s: %s (%s), want inconclusive", p, got["plain/"+p], why["plain/"+p])
				}
			}
		})
	}
}

// hostileA2A is an A2A agent that serves its card but hangs on (mode
// "hang") or fails (mode "500") every JSON-RPC request; with mode
// "hang-all" its card hangs too.
func hostileA2A(t *testing.T, mode string) string {
	t.Helper()
	var srv *httptest.Server
	stop := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && mode != "hang-all" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"hostile","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
				`"url":%q,"protocolVersion":"0.3.0","capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
				`"skills":[{"id":"hello","name":"hello","description":"d","tags":["t"]}]}`, srv.URL+"/a2a", srv.URL+"/a2a")
			return
		}
		switch mode {
		case "500":
			http.Error(w, "internal server error", http.StatusInternalServerError)
		default:
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return "a2a+" + srv.URL + "/a2a"
}

// TestHostileA2A: an agent that hangs, and one that fails every request.
func TestHostileA2A(t *testing.T) {
	for _, mode := range []string{"hang", "hang-all", "500"} {
		t.Run(mode, func(t *testing.T) {
			code, got, why := hostileOutcomes(t, hostileA2A(t, mode))
			// Its card reaches the client through replay's forger when the
			// agent serves it: P2 reproduces (nothing verifies the card), exit 1.
			exit := cli.ExitPartial
			if got["plain/P2_card"] == "reproduced" {
				exit = cli.ExitFindings
			}
			noFlattery(t, code, exit, got, why)
			for _, p := range []string{"P1_identity", "P2_card", "P3_delegation", "P5_consent", "WF_wire"} {
				if o := got["plain/"+p]; o != "inconclusive" && !(p == "P2_card" && o == "reproduced") {
					t.Errorf("%s: %s (%s), want inconclusive", p, o, why["plain/"+p])
				}
			}
		})
	}
}

// hostileAGUI is an AG-UI agent whose run hangs ("hang"), fails ("500"),
// ends its stream mid-message ("cut") or drops the connection there
// ("reset").
func hostileAGUI(t *testing.T, mode string) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode {
		case "hang":
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		case "500":
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, ev := range []string{`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"The weather in Paris is"}`} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
		w.(http.Flusher).Flush()
		if mode == "reset" {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return "agui+" + srv.URL + "/run"
}

// TestHostileAGUI: a stream that stops mid-message breaks the event
// discipline (WF reproduced, exit 1), but its half answer says nothing of
// whether the agent would follow a planted instruction (P4 inconclusive);
// a run that hangs, fails or is reset gives no verdict at all.
func TestHostileAGUI(t *testing.T) {
	for mode, want := range map[string]map[string]string{
		"hang":  {"WF_events": "inconclusive", "P4_prompt_integrity": "inconclusive"},
		"500":   {"WF_events": "inconclusive", "P4_prompt_integrity": "inconclusive"},
		"reset": {"WF_events": "inconclusive", "P4_prompt_integrity": "inconclusive"},
		"cut":   {"WF_events": "reproduced", "P4_prompt_integrity": "inconclusive"},
	} {
		t.Run(mode, func(t *testing.T) {
			code, got, why := hostileOutcomes(t, hostileAGUI(t, mode))
			exit := cli.ExitPartial
			if want["WF_events"] == "reproduced" {
				exit = cli.ExitFindings
			}
			noFlattery(t, code, exit, got, why)
			for p, w := range want {
				if got["plain/"+p] != w {
					t.Errorf("%s: %s (%s), want %s", p, got["plain/"+p], why["plain/"+p], w)
				}
			}
		})
	}
}

// TestHostileBehindWarden: in front of a target that gives nothing, the
// gateway's refusals have nothing to show either. A call warden would
// refuse is never reached, since the handshake the gateway relays is not
// served; no probe, plain or behind warden, reads blocked.
func TestHostileBehindWarden(t *testing.T) {
	for _, target := range []func(*testing.T) string{
		func(t *testing.T) string { return stdioTarget(t, "exit") },
		func(t *testing.T) string { return stdioTarget(t, "sleep") },
		func(t *testing.T) string { return stdioTarget(t, "error-everything") },
		func(t *testing.T) string { return hostileHTTP(t, "500") },
	} {
		spec := target(t)
		t.Run(spec[strings.LastIndex(spec, " ")+1:], func(t *testing.T) {
			code, got, why := hostileOutcomes(t, spec, "--warden")
			noFlattery(t, code, cli.ExitPartial, got, why)
			for p, o := range got {
				if strings.HasPrefix(p, "warden/") && o != "inconclusive" && o != "unrealisable" {
					t.Errorf("%s: %s (%s), want inconclusive", p, o, why[p])
				}
			}
		})
	}
}
