//go:build integration

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// SIGTERM stops warden gateway --stdio gracefully: a call that finishes
// within gateway.limits.drain_timeout is answered by the upstream, one that
// does not is answered with -32035 rule shutdown, a request sent meanwhile
// is refused the same way, warden exits 7, and the audit log records
// exactly the answers the client received.
func TestSIGTERMDrainsStdio(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.db")
	cfgPath := filepath.Join(dir, "warden.yaml")
	cfg := fmt.Sprintf("version: 1\ngateway:\n  limits: {drain_timeout: 4s}\n  audit: {path: %q}\n  upstreams: [{name: demo, command: [%q, demo-server, --root, %q]}]\n", auditPath, wardenBin, dir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, wardenBin, "gateway", "--config", cfgPath, "--stdio", "--", wardenBin, "demo-server", "--root", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]json.RawMessage, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next message with an id (answers), or a
	// progress notification of token.
	answers := map[string]map[string]json.RawMessage{}
	progressed := map[string]bool{}
	next := func() {
		t.Helper()
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("warden's stdout ended")
			}
			if id, ok := m["id"]; ok {
				answers[string(id)] = m
			} else if string(m["method"]) == `"notifications/progress"` {
				var p struct {
					Token json.RawMessage `json:"progressToken"`
				}
				json.Unmarshal(m["params"], &p)
				progressed[string(p.Token)] = true
			}
		case <-ctx.Done():
			t.Fatal("no message from warden")
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	for answers["1"] == nil {
		next()
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// short: 4 steps of 500 ms, well within the 4 s drain; long: 20 s.
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_count","arguments":{"count":4,"delay_ms":500},"_meta":{"progressToken":"short"}}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"count":20,"delay_ms":1000},"_meta":{"progressToken":"long"}}}`)
	for !progressed[`"short"`] { // both are in flight

		next()
	}
	if answers["2"] != nil {
		t.Fatal("the short call finished before SIGTERM; the test proves nothing")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The stop has begun when a request is refused: ping until one is,
	// rather than guess how long the signal takes to land. Pings answered
	// before that are not checked.
	refused := ""
	for id := 4; refused == ""; id++ {
		if id > 10000 {
			t.Fatal("no request was refused after SIGTERM")
		}
		ping := strconv.Itoa(id)
		send(`{"jsonrpc":"2.0","id":` + ping + `,"method":"ping"}`)
		for answers[ping] == nil {
			next()
		}
		if answers[ping]["error"] != nil {
			refused = ping
		}
	}
	for answers["2"] == nil || answers["3"] == nil {
		next()
	}
	stdin.Close()
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("warden exited with %v, want exit code 7 (calls cut at the drain time)", err)
	}

	type errorData struct {
		Code int64 `json:"code"`
		Data struct {
			Stage, Rule string
		} `json:"data"`
	}
	shutdown := func(id string) {
		t.Helper()
		var e errorData
		if err := json.Unmarshal(answers[id]["error"], &e); err != nil || e.Code != -32035 || e.Data.Stage != "gateway" || e.Data.Rule != "shutdown" {
			t.Fatalf("call %s got %s, want -32035 gateway/shutdown", id, answers[id]["error"])
		}
	}
	if answers["2"]["result"] == nil {
		t.Fatalf("the short call got %v, want its result", answers["2"])
	}
	shutdown("3")
	shutdown(refused)

	// The audit log says the same, answer by answer.
	answered := answerRecords(t, auditPath)
	want := map[string]string{"2": "allow upstream /", "3": "error warden gateway/shutdown", refused: "deny client gateway/shutdown"}
	for id, w := range want {
		if got := answered[id]; len(got) != 1 || got[0] != w {
			t.Errorf("request %s: the audit log records %q, the client got %q", id, got, w)
		}
	}
}

// answerRecords reads the audit log at path (of the default backend) and returns, by request
// id, the records of what each request got ("decision direction
// stage/rule"): the upstream's answer or warden's refusal or error. The
// record of a client's request that was let through is not an answer, nor
// is an upstream's answer to a call already answered by the gateway's stop
// (dropped, never sent).
func answerRecords(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := audit.OpenBackend(audit.KindAuto, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	answered := map[string][]string{}
	if _, err := b.Scan(context.Background(), func(r audit.Record) error {
		dropped := r.Rule == "unsolicited-response" && r.Decision == audit.Deny
		if r.RequestID != "" && !dropped && (r.Direction != "client" || r.Decision != audit.Allow) {
			answered[r.RequestID] = append(answered[r.RequestID], fmt.Sprintf("%s %s %s/%s", r.Decision, r.Direction, r.Stage, r.Rule))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return answered
}

// testWriter logs what a child writes to stderr.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
