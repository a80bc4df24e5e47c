//go:build integration

package difftest

// The corpus without warden: each message written straight to each SDK's
// stdin, as one write of its bytes and a newline, the way a stdio client
// (or a gateway that relayed the bytes as they came) would. What the SDK
// ran then is the attack's effect with nothing in the way: the other column
// of the differential.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// plainPeer is one SDK server run as a stdio child, without warden.
type plainPeer struct {
	t      *testing.T
	up     upstream
	oracle *oracleReader
	rev    string

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers chan string // lines the server wrote
	barrier int
}

func startPlain(t *testing.T, up upstream, oraclePath, rev string) (*plainPeer, error) {
	p := &plainPeer{t: t, up: up, oracle: &oracleReader{path: oraclePath}, rev: rev}
	p.cmd = exec.Command(up.command[0], up.command[1:]...)
	p.cmd.Env = append(os.Environ(), "DIFFTEST_ORACLE="+oraclePath)
	for k, v := range up.env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.answers = make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			p.answers <- sc.Text()
		}
		close(p.answers)
	}()
	p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"plain","version":"1"}}}`, rev))
	if !p.await(30*time.Second, `"init"`) { // Node loading the SDK on a busy machine
		p.stop()
		return nil, fmt.Errorf("%s: no answer to initialize", up.name)
	}
	p.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if !p.sync() {
		p.stop()
		return nil, fmt.Errorf("%s: no answer to the first ping", up.name)
	}
	if _, err := p.oracle.next(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *plainPeer) write(line string) { _, _ = io.WriteString(p.stdin, line+"\n") }

// await reads answers until it has seen each of ids (JSON text), for up
// to d; it reports whether it did.
func (p *plainPeer) await(d time.Duration, ids ...string) bool {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	deadline := time.After(d)
	for len(want) > 0 {
		select {
		case line, ok := <-p.answers:
			if !ok {
				return false
			}
			for _, m := range splitBatch([]byte(line)) {
				var r struct{ ID json.RawMessage }
				if json.Unmarshal(m, &r) == nil {
					delete(want, string(r.ID))
				}
			}
		case <-deadline:
			return false
		}
	}
	return true
}

// idsOf returns the ids (JSON text) of msg's requests, as encoding/json
// reads them, so that their handlers have run once they are answered.
func idsOf(msg string) []string {
	var ids []string
	for _, m := range splitBatch([]byte(strings.TrimSpace(msg))) {
		var r map[string]json.RawMessage
		if json.Unmarshal(m, &r) == nil && r["id"] != nil && r["method"] != nil {
			ids = append(ids, string(r["id"]))
		}
	}
	return ids
}

// sync sends a ping and waits for its answer: the server has then read
// everything before it.
func (p *plainPeer) sync() bool {
	p.barrier++
	id := fmt.Sprintf(`"barrier-%d"`, p.barrier)
	p.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
	return p.await(5*time.Second, id)
}

// stop ends the child it started (by its own process handle) and waits.
func (p *plainPeer) stop() {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// plainOutcome is what one SDK did with one entry, plainly.
type plainOutcome struct {
	calls []callRecord
	dead  bool // the server stopped answering (crashed, or its reader broke)
}

func (o plainOutcome) String() string {
	var parts []string
	for _, c := range o.calls {
		parts = append(parts, c.Tool+" "+string(c.Arguments))
	}
	s := "nothing ran"
	if len(parts) > 0 {
		s = "RAN " + strings.Join(parts, "; ")
	}
	if o.dead {
		s += " (then answered no ping: restarted)"
	}
	return s
}

// TestPlain writes every corpus entry (or those DIFFTEST_ONLY matches)
// to each SDK directly and reports which handlers ran. The positive
// controls (entries with Runs, one line without white space around it, which
// go-sdk's reader refuses) must run their tool: otherwise the servers,
// not warden, would be why the differential run saw nothing run. The report
// (-v) is the "without warden" column of the red-team table.
func TestPlain(t *testing.T) {
	build(t)
	entries := corpus()
	if only := os.Getenv("DIFFTEST_ONLY"); only != "" {
		re := regexp.MustCompile(only)
		var some []Entry
		for _, e := range entries {
			if re.MatchString(e.Name) {
				some = append(some, e)
			}
		}
		entries = some
	}
	table := map[string]map[string]plainOutcome{}
	var sdks []string
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			sdks = append(sdks, up.name)
			oracle := filepath.Join(t.TempDir(), "oracle.jsonl")
			for _, rev := range []string{defaultRev, batchRev} {
				var p *plainPeer
				for _, e := range entries {
					if e.Rev != rev && !(rev == defaultRev && e.Rev == "") {
						continue
					}
					if p == nil {
						var err error
						if p, err = startPlain(t, up, oracle, rev); err != nil {
							t.Fatal(err)
						}
					}
					msg := e.Msg
					for i := range e.Tokens {
						msg = strings.ReplaceAll(msg, fmt.Sprintf("${TOKEN%d}", i), "plain-token")
					}
					msg = fillBytes(strings.ReplaceAll(msg, "${PAD}", strings.Repeat("x", e.Pad)))
					p.write(msg)
					// Handlers may run concurrently (go-sdk): wait for the
					// message's own answers (an SDK may give none) before
					// the ping.
					p.await(time.Second, idsOf(msg)...)
					alive := p.sync()
					recs, err := p.oracle.next()
					if err != nil {
						t.Fatal(err)
					}
					var o plainOutcome
					for _, r := range recs {
						if r.Kind == "call" {
							o.calls = append(o.calls, r.call)
						}
					}
					if !alive {
						o.dead = true
						p.stop()
						p = nil
					}
					if table[e.Name] == nil {
						table[e.Name] = map[string]plainOutcome{}
					}
					table[e.Name][up.name] = o
					if e.Runs != "" && strings.TrimSpace(msg) == msg && !strings.ContainsAny(msg, "\r\n") && !ran(o.calls, e.Runs) {
						t.Errorf("%s: a positive control; %s must run %s plainly, and %s", e.Name, up.name, e.Runs, o)
					}
				}
				if p != nil {
					p.stop()
				}
			}
		})
	}
	var names []string
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s", n)
		for _, sdk := range sdks {
			fmt.Fprintf(&b, " | %s: %s", sdk, table[n][sdk])
		}
		b.WriteString("\n")
	}
	t.Logf("without warden:\n%s", b.String())
}
