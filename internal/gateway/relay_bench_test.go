//go:build unix

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// BenchmarkHTTPRelay measures one tools/call round trip over HTTP
// keep-alive, directly to a minimal upstream and through the gateway, so that
// the difference of the two (time, process CPU and allocs per op) is warden's
// own cost: its listener, relay and upstream client. Process CPU (cpu-µs/op,
// from getrusage) includes the scheduler's and the garbage collector's work,
// and is steadier than time on a loaded machine. The upstream answers as the go-sdk's
// server does without an event store (one SSE event, no priming event), or in
// application/json.
//
//	go test -run - -bench HTTPRelay -benchmem ./internal/gateway/
func BenchmarkHTTPRelay(b *testing.B) {
	for _, framing := range []string{"sse", "json"} {
		up := httptest.NewServer(benchUpstream(framing == "json"))
		g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{
			Name: "up", Transport: "http",
			Dial: func(context.Context, bool) (transport.Conn, error) {
				return transport.NewHTTPClient(transport.HTTPClientOptions{URL: up.URL}), nil
			},
		}}})
		if err != nil {
			b.Fatal(err)
		}
		gw := httptest.NewUnstartedServer(g.Handler())
		// Profiles label warden's goroutines: -tagfocus side=warden.
		pprof.Do(context.Background(), pprof.Labels("side", "warden"), func(context.Context) { gw.Start() })
		b.Run(framing+"/direct", func(b *testing.B) { benchCalls(b, up.URL) })
		b.Run(framing+"/warden", func(b *testing.B) { benchCalls(b, gw.URL+"/mcp") })
		gw.Close()
		g.Close()
		up.Close()
	}
}

// benchCalls opens a session at url and makes b.N sequential tools/calls.
func benchCalls(b *testing.B, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	post := func(sid, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("%s: %s", resp.Status, data)
		}
		return resp, data
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		_, data := post(sid, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}`)
		if !bytes.Contains(data, []byte(`"bench"`)) {
			b.Fatalf("answer %s", data)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchUpstream is a minimal streamable-HTTP MCP server whose every request
// is answered at once: initialize with a session, tools/call with the
// arguments echoed.
func benchUpstream(json bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !m.IsCall() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := `{"content":[{"type":"text","text":"bench"}]}`
		if m.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", "s1")
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}`
		}
		out := []byte(`{"jsonrpc":"2.0","id":` + m.ID.Raw() + `,"result":` + result + `}`)
		if json {
			w.Header().Set("Content-Type", "application/json")
			w.Write(out)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(append(append([]byte("event: message\ndata: "), out...), "\n\n"...))
		http.NewResponseController(w).Flush()
	})
}

// BenchmarkStdioRelay measures one tools/call round trip over stdio framing
// (a line of JSON each way on OS pipes), directly to a minimal upstream and
// through the gateway, as `warden gateway --stdio` relays it: the client's
// stream, the relay, the upstream's stream. Client, warden and upstream share
// this process (no child process), so the difference of the two is warden's
// own cost per call; half the difference in allocs/op is the allocations per
// relayed message (a call is a request and a response).
//
//	go test -run - -bench StdioRelay -benchmem ./internal/gateway/
func BenchmarkStdioRelay(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		toUp, fromUp := startStdioUpstream(b)
		benchStdioCalls(b, fromUp, toUp)
	})
	b.Run("warden", func(b *testing.B) {
		toUp, fromUp := startStdioUpstream(b)
		g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{
			Name: "up", Transport: "stdio",
			Dial: func(context.Context, bool) (transport.Conn, error) {
				return transport.NewStream(fromUp, toUp, nil, transport.StreamOptions{Name: "up"}), nil
			},
		}}})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		clientR, wardenW := benchPipe(b) // warden → client
		wardenR, clientW := benchPipe(b) // client → warden
		client := transport.NewStream(wardenR, wardenW, nil, transport.StreamOptions{Name: "client", ReplyInvalid: true})
		done := make(chan struct{})
		pprof.Do(context.Background(), pprof.Labels("side", "warden"), func(ctx context.Context) {
			go func() {
				defer close(done)
				g.ServeConn(ctx, client, "up", "", false)
			}()
		})
		benchStdioCalls(b, clientR, clientW)
		clientW.Close() // the client leaves: the relay ends
		<-done
	})
}

// benchPipe returns an OS pipe, closed when the benchmark ends.
func benchPipe(b *testing.B) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// startStdioUpstream starts a minimal stdio MCP server on pipes, answering
// as benchUpstream does, and returns the pipe ends that reach it.
func startStdioUpstream(b *testing.B) (toUp, fromUp *os.File) {
	upR, toUp := benchPipe(b)
	fromUp, upW := benchPipe(b)
	go func() {
		r := bufio.NewReader(upR)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			m, err := jsonrpc.Decode(bytes.TrimSuffix(line, []byte("\n")), jsonrpc.Limits{})
			if err != nil || !m.IsCall() {
				continue
			}
			result := `{"content":[{"type":"text","text":"bench"}]}`
			if m.Method == "initialize" {
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}`
			}
			if _, err := upW.Write([]byte(`{"jsonrpc":"2.0","id":` + m.ID.Raw() + `,"result":` + result + "}\n")); err != nil {
				return
			}
		}
	}()
	return toUp, fromUp
}

// benchStdioCalls initializes a session over r and w and makes b.N
// sequential tools/calls.
func benchStdioCalls(b *testing.B, r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	call := func(line string) []byte {
		if _, err := io.WriteString(w, line); err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) { // a notification: no answer
			return nil
		}
		answer, err := br.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		return answer
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}` + "\n")
	call(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		answer := call(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}` + "\n")
		if !bytes.Contains(answer, []byte(`"bench"`)) {
			b.Fatalf("answer %s", answer)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
