//go:build integration

package difftest

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestStatelessWhiteSpace: at the stateless revision (2026-07-28) the
// requests of every client share one go-sdk child (internal/gateway's
// shared.go), and go-sdk's stdio reader ends the connection when a message
// is followed by anything but a line break. A client whose body ends in
// spaces, or has line breaks inside, must neither end that child for the
// others nor fail itself: each of these bodies, sent by another "client"
// (no session), runs safe_echo once on the same child. The oracle is the
// handler runs and the pid that ran them.
func TestStatelessWhiteSpace(t *testing.T) {
	build(t)
	up := upstreams[0].make(t) // go-sdk: the SDK with 2026-07-28
	g := startGateway(t, up)
	o := &oracleReader{path: g.oracle}
	const rev = "2026-07-28"
	call := func(id int, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"safe_echo","arguments":{"text":%q},"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			id, text, rev)
	}
	bodies := []string{
		call(1, "plain"),
		call(2, "trailing spaces") + "   ",
		call(3, "trailing tab") + "\t",
		"\r\n" + call(4, "line breaks around") + "\r\n",
		strings.Replace(call(5, "line breaks inside"), ",", ",\n", -1),
		call(6, "after them"),
	}
	client := &http.Client{}
	for i, body := range bodies {
		req, err := http.NewRequest(http.MethodPost, g.url, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		setHeaders(req, "", rev)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "safe_echo")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := readReply(resp)
		if !hasResult(r) {
			t.Errorf("body %d %q: status %d, answered %s, want safe_echo's result\nwarden's log:\n%s", i, body, r.status, joinMsgs(r.msgs), g.log())
		}
	}
	recs, err := o.next()
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	ran := 0
	for _, rec := range recs {
		if rec.Kind == "call" && rec.call.Tool == "safe_echo" {
			ran++
			pids[rec.call.PID] = true
		}
	}
	if ran != len(bodies) || len(pids) != 1 {
		t.Errorf("safe_echo ran %d times in %d processes, want %d times in one (the shared child, never restarted)", ran, len(pids), len(bodies))
	}
}
