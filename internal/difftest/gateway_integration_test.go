//go:build integration

package difftest

// The real warden binary in front of one upstream, and a client that sends
// raw bytes to its streamable HTTP listener.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateway is one `warden gateway --config FILE` process serving one upstream.
type gateway struct {
	// Immutable after startGateway.
	t        *testing.T
	upstream string // the upstream's name in the configuration
	url      string // its MCP endpoint
	dataDir  string // zero-trust keys
	audit    string // the audit log (SQLite)
	oracle   string // the upstream's oracle file
	cmd      *exec.Cmd
	// tokensFrom is when tokens may be issued: a token issued before the
	// replay store's epoch (its creation, as warden started; in whole
	// seconds, as iat is) is refused, since its single use cannot be proven.
	tokensFrom time.Time

	mu     sync.Mutex
	stderr bytes.Buffer // warden's log; guarded by mu
}

// startGateway writes the configuration, creates the signing key and starts
// warden; the gateway is stopped when the test ends (or by stop).
func startGateway(t *testing.T, up upstream) *gateway {
	t.Helper()
	return startGatewayWith(t, up, "")
}

// startGatewayWith is startGateway with more of the gateway section:
// extra is YAML lines indented as gateway's members.
func startGatewayWith(t *testing.T, up upstream, extra string) *gateway {
	t.Helper()
	dir := t.TempDir()
	g := &gateway{t: t, upstream: up.name, dataDir: filepath.Join(dir, "data"),
		audit: filepath.Join(dir, "audit.db"), oracle: filepath.Join(dir, "oracle.jsonl")}
	if out, err := exec.Command(wardenBin, "keys", "generate", "--data-dir", g.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("warden keys generate: %v\n%s", err, out)
	}
	env := map[string]string{"DIFFTEST_ORACLE": g.oracle}
	for k, v := range up.env {
		env[k] = v
	}
	cfg := fmt.Sprintf(`version: 1
log: {level: warn}
gateway:
  listen: {addr: "127.0.0.1:0"}
  limits: {max_message_bytes: %d, max_depth: %d, request_timeout: 10s}
  zero_trust: {data_dir: %s, subject: %s, store: memory, skew: 0s}
  audit: {path: %s}
%s  upstreams:
    - name: %s
      command: %s
      env: %s
      tools: {deny: [read_file]}
      require_token: [transfer_funds]
      mandates: [{tool: transfer_funds, arguments: %s}]
`, maxMessage, maxDepth, yamlString(g.dataDir), subject, yamlString(g.audit), extra, up.name, yamlList(up.command), yamlMap(env),
		yamlString(argsMandate))
	cfgPath := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	g.cmd = exec.Command(wardenBin, "gateway", "--config", cfgPath)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.stop)
	// The listener's address is on the line "warden gateway listening on URL".
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "warden gateway listening on "); ok {
				addr <- u
			}
			g.mu.Lock()
			g.stderr.WriteString(line + "\n")
			g.mu.Unlock()
		}
		close(addr)
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatalf("warden gateway exited before listening:\n%s\nconfiguration:\n%s", g.log(), cfg)
		}
		g.url = u + "/mcp"
		g.tokensFrom = time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)
	case <-time.After(30 * time.Second):
		t.Fatalf("warden gateway did not listen within 30s:\n%s", g.log())
	}
	return g
}

// stop ends warden (SIGINT: it closes the upstreams and the audit log) and
// waits for it.
func (g *gateway) stop() {
	if g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
		g.t.Errorf("warden gateway did not stop within 15s of SIGINT")
	}
}

func (g *gateway) log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stderr.String()
}

// issueToken runs `warden token issue` for spec, as an operator would. The
// token lives 30 s, so it is issued just before its message is sent.
func (g *gateway) issueToken(spec TokenSpec) (string, error) {
	sub := spec.Sub
	if sub == "" {
		sub = subject
	}
	time.Sleep(time.Until(g.tokensFrom))
	upstream := spec.Upstream
	if upstream == "" {
		upstream = g.upstream
	}
	args := []string{"token", "issue", "--sub", sub, "--upstream", upstream, "--tool", spec.Tool, "--params", spec.Args, "--data-dir", g.dataDir}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(wardenBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("warden %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// session is one MCP session on the gateway's listener.
type session struct {
	g       *gateway
	client  *http.Client
	id      string // Mcp-Session-Id
	rev     string // negotiated revision
	barrier int
}

// reply is what one POST got back.
type reply struct {
	status int
	msgs   []json.RawMessage // the JSON-RPC messages in the body
	err    error             // transport failure or timeout
}

// open initializes a session at revision rev and syncs with the upstream.
func (g *gateway) open(rev string) (*session, error) {
	return g.openWith(rev, &http.Client{Timeout: 30 * time.Second})
}

// openWith is open with client, which may add a credential to each request.
func (g *gateway) openWith(rev string, client *http.Client) (*session, error) {
	s := &session{g: g, client: client}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"difftest","version":"1"}}}`, rev)
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(init))
	if err != nil {
		return nil, err
	}
	setHeaders(req, "", "")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	r := readReply(resp)
	if r.err != nil || len(r.msgs) != 1 {
		return nil, fmt.Errorf("initialize: status %d, %d messages, %v", r.status, len(r.msgs), r.err)
	}
	var res struct {
		Result struct{ ProtocolVersion string } `json:"result"`
	}
	if err := json.Unmarshal(r.msgs[0], &res); err != nil || res.Result.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize answered %s", r.msgs[0])
	}
	s.id, s.rev = resp.Header.Get("Mcp-Session-Id"), res.Result.ProtocolVersion
	if s.id == "" {
		return nil, errors.New("initialize gave no Mcp-Session-Id")
	}
	if r := s.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.err != nil || r.status != http.StatusAccepted {
		return nil, fmt.Errorf("notifications/initialized: status %d, %v", r.status, r.err)
	}
	if err := s.sync(); err != nil {
		return nil, err
	}
	return s, nil
}

// post sends body as one POST on the session.
func (s *session) post(body []byte) reply {
	req, err := http.NewRequest(http.MethodPost, s.g.url, bytes.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	setHeaders(req, s.id, s.rev)
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	return readReply(resp)
}

// postVariant sends body as one POST on the session, with v's headers and
// encoding.
func (s *session) postVariant(body []byte, v HTTPVariant) reply {
	if v.Gzip {
		body = gzipped(body)
	}
	req, err := http.NewRequest(http.MethodPost, s.g.url, bytes.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	setHeaders(req, s.id, s.rev)
	for k, vs := range v.Headers {
		req.Header.Del(k)
		for _, val := range vs {
			req.Header.Add(k, strings.ReplaceAll(val, "${SESSION}", s.id))
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	return readReply(resp)
}

// sync sends a ping and waits for its answer. The relay forwards in order
// and the upstreams record each line as they read it, so once the ping is
// answered every line of the messages before it is in the oracle file.
func (s *session) sync() error {
	s.barrier++
	id := fmt.Sprintf("barrier-%d", s.barrier)
	r := s.post([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}`))
	if r.err != nil {
		return fmt.Errorf("ping %s: %w", id, r.err)
	}
	for _, m := range r.msgs {
		var res struct {
			ID     string          `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &res) == nil && res.ID == id && res.Result != nil {
			return nil
		}
	}
	return fmt.Errorf("ping %s: status %d, answered %s", id, r.status, joinMsgs(r.msgs))
}

func setHeaders(req *http.Request, session, rev string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if rev != "" {
		req.Header.Set("Mcp-Protocol-Version", rev)
	}
}

// readReply reads a POST's answer: an SSE stream, a JSON body (a message
// or a batch of them), or nothing (202).
func readReply(resp *http.Response) reply {
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var data []string
		flush := func() { // an event without data (the priming event) carries no message
			if d := bytes.TrimSpace([]byte(strings.Join(data, "\n"))); len(d) > 0 {
				r.msgs = append(r.msgs, splitBatch(d)...)
			}
			data = nil
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				flush()
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		flush()
		if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
			r.err = err
		}
		return r
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.err = err
	}
	if b := bytes.TrimSpace(body); len(b) > 0 {
		r.msgs = splitBatch(b)
	}
	return r
}

// splitBatch returns the messages of a JSON array, or b itself.
func splitBatch(b []byte) []json.RawMessage {
	var batch []json.RawMessage
	if bytes.HasPrefix(b, []byte("[")) && json.Unmarshal(b, &batch) == nil {
		return batch
	}
	return []json.RawMessage{b}
}

func joinMsgs(msgs []json.RawMessage) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, string(m))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// The YAML scalars of the configuration: JSON strings are YAML strings.
func yamlString(s string) string { return q(s) }

func yamlList(items []string) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, yamlString(it))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func yamlMap(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+": "+yamlString(v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
