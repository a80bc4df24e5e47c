package cli

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/config"
)

// A client that sends its headers slowly loses the connection after
// gateway.limits.header_timeout, while one that sends them in time is served.
func TestGatewayServerHeaderTimeout(t *testing.T) {
	limits := config.Default().Gateway.Limits
	limits.HeaderTimeout = 200 * time.Millisecond
	srv := gatewayServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), limits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // the failure guard
		return c
	}

	slow := dial()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a stalled header: read %v, want the connection closed (EOF)", err)
	}

	quick := dial()
	if _, err := io.WriteString(quick, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(quick), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "ok") {
		t.Fatalf("%s %q", resp.Status, body)
	}
}
