//go:build integration

package difftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	// The mcp-go upstream (testdata/upstream) is built with it; importing
	// it here keeps go mod tidy, which does not look into testdata, from
	// dropping the module.
	_ "github.com/mark3labs/mcp-go/server"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/testenv"
)

// Built once per test binary, into binDir (TestMain).
var (
	binDir                 string
	buildOnce              sync.Once
	buildErr               error
	wardenBin, upstreamBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "difftest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds warden and the Go upstream, once.
func build(t *testing.T) {
	t.Helper()
	root := testenv.ModuleRoot(t)
	buildOnce.Do(func() {
		wardenBin = filepath.Join(binDir, "warden")
		upstreamBin = filepath.Join(binDir, "upstream")
		for pkg, out := range map[string]string{"./cmd/warden": wardenBin, "./internal/difftest/testdata/upstream": upstreamBin} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// upstream is an MCP server on one SDK, as warden's configuration runs it.
type upstream struct {
	name    string // its upstream name in warden's configuration, and the oracle's "sdk"
	command []string
	env     map[string]string
}

// upstreams returns the three SDK servers. The TypeScript one needs Node 22
// and the SDK from `make deps`: without them its subtest is skipped, or
// fails under WARDEN_REQUIRE_DEPS=1.
var upstreams = []struct {
	name string
	make func(t *testing.T) upstream
}{
	{"go-sdk", func(t *testing.T) upstream {
		return upstream{name: "go-sdk", command: []string{upstreamBin, "-sdk", "go-sdk"}}
	}},
	{"mcp-go", func(t *testing.T) upstream {
		return upstream{name: "mcp-go", command: []string{upstreamBin, "-sdk", "mcp-go"}}
	}},
	{"ts-sdk", func(t *testing.T) upstream {
		node, sdk := testenv.Node22(t), testenv.TypeScriptSDK(t)
		script, err := filepath.Abs(filepath.Join("testdata", "tsserver", "server.cjs"))
		if err != nil {
			t.Fatal(err)
		}
		return upstream{name: "ts-sdk", command: []string{node, script}, env: map[string]string{"NODE_PATH": sdk}}
	}},
}

// TestDifferential sends the corpus through the real warden to each SDK's
// server and holds what the servers did to the oracle (oracle_integration_test.go).
func TestDifferential(t *testing.T) {
	build(t)
	entries := corpus()
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			r := runCorpus(t, up, entries)
			r.check(t)
			t.Log(r.summary())
		})
	}
}

// outcome is what happened to one corpus entry on one upstream.
type outcome struct {
	entry   Entry
	tokens  []issuedToken  // the tokens issued for it
	reply   reply          // what the POST got back
	wire    []string       // the lines the upstream read while handling it
	calls   []callRecord   // the handler runs it caused
	lost    bool           // the session ended while it was handled
	session string         // its session's Mcp-Session-Id
	barrier int            // the number of the ping that followed it (session.sync)
	audit   []audit.Record // warden's client-side records of it (filled by check)
}

type issuedToken struct {
	spec  TokenSpec
	token string
	err   error // not issued: it cannot authorize anything
}

// run is the corpus sent to one upstream.
type run struct {
	upstream string
	g        *gateway
	outcomes []*outcome
	restarts int // sessions opened again after one ended

	violations []violation // set by check
	oracle     *oracleReader
}

// runCorpus sends every entry through one warden to up, one at a time: the
// entry, then a ping whose answer says the upstream has read everything
// before it. Entries of each revision share a session; a session that ends
// (an upstream that crashed) is opened again for the next entry.
func runCorpus(t *testing.T, up upstream, entries []Entry) *run {
	if only := os.Getenv("DIFFTEST_ONLY"); only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			t.Fatalf("DIFFTEST_ONLY: %v", err)
		}
		var some []Entry
		for _, e := range entries {
			if re.MatchString(e.Name) {
				some = append(some, e)
			}
		}
		t.Logf("DIFFTEST_ONLY=%s: %d of %d entries", only, len(some), len(entries))
		entries = some
	}
	g := startGateway(t, up)
	r := &run{upstream: up.name, g: g, oracle: &oracleReader{path: g.oracle}}
	for _, rev := range []string{defaultRev, batchRev} {
		var s *session
		for _, e := range entries {
			if e.Rev != rev && !(rev == defaultRev && e.Rev == "") {
				continue
			}
			if s == nil {
				var err error
				if s, err = g.open(rev); err != nil {
					t.Fatalf("%s: open a %s session: %v\nwarden's log:\n%s", up.name, rev, err, g.log())
				}
				if _, err := r.oracle.next(); err != nil { // the handshake
					t.Fatal(err)
				}
			}
			o := r.send(t, s, e)
			if o.lost {
				s = nil
				r.restarts++
			}
		}
	}
	g.stop()
	return r
}

// send fills e's placeholders, sends it, syncs, and collects what the
// upstream read and ran meanwhile.
func (r *run) send(t *testing.T, s *session, e Entry) *outcome {
	o := &outcome{entry: e}
	msg := e.Msg
	for i, spec := range e.Tokens {
		tok, err := r.g.issueToken(spec)
		o.tokens = append(o.tokens, issuedToken{spec: spec, token: tok, err: err})
		if err != nil {
			// A token warden will not issue (say, for arguments it
			// refuses) is no token: send a string that is none.
			tok = "not-issued"
			t.Logf("%s: %v", e.Name, err)
		}
		msg = strings.ReplaceAll(msg, fmt.Sprintf("${TOKEN%d}", i), tok)
	}
	msg = strings.ReplaceAll(msg, "${PAD}", strings.Repeat("x", e.Pad))
	msg = fillBytes(msg)
	start := time.Now()
	if e.HTTP != nil {
		o.reply = s.postVariant([]byte(msg), *e.HTTP)
	} else {
		o.reply = s.post([]byte(msg))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Logf("%s: answered after %v", e.Name, d.Round(time.Millisecond))
	}
	err := s.sync()
	o.session, o.barrier = s.id, s.barrier
	if err != nil {
		o.lost = true
		t.Logf("%s: the session ended (%v); opening another", e.Name, err)
		time.Sleep(200 * time.Millisecond) // the upstream's last lines
	}
	recs, err := r.oracle.next()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		switch {
		case rec.Kind == "call":
			o.calls = append(o.calls, rec.call)
		case !isBarrier(rec.wire.Line):
			o.wire = append(o.wire, rec.wire.Line)
		}
	}
	r.outcomes = append(r.outcomes, o)
	return o
}

// isBarrier reports whether line is one of session.sync's pings.
func isBarrier(line string) bool {
	var m struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal([]byte(line), &m) != nil || m.Method != "ping" {
		return false
	}
	id, ok := m.ID.(string)
	return ok && strings.HasPrefix(id, "barrier-")
}

// callRecord and wireRecord are the oracle file's records
// (testdata/upstream/record.go).
type callRecord struct {
	SDK       string          `json:"sdk"`
	PID       int             `json:"pid"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Effect    *transfer       `json:"effect"`
	MetaKeys  []string        `json:"meta_keys"`
	Meta      json.RawMessage `json:"meta"`
}

type wireRecord struct {
	SDK  string `json:"sdk"`
	PID  int    `json:"pid"`
	Line string `json:"line"`
}

// transfer is what transfer_funds acted on.
type transfer struct {
	Source      string  `json:"source"`
	Amount      float64 `json:"amount"`
	Destination string  `json:"destination"`
}

type oracleRecord struct {
	Kind string
	call callRecord
	wire wireRecord
}

// oracleReader reads the records an upstream appended since the last call.
type oracleReader struct {
	path   string
	offset int64
}

func (o *oracleReader) next() ([]oracleRecord, error) {
	data, err := os.ReadFile(o.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data = data[o.offset:]
	end := bytes.LastIndexByte(data, '\n') + 1 // whole lines only
	o.offset += int64(end)
	var recs []oracleRecord
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var kind struct{ Kind string }
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, fmt.Errorf("oracle %s: %v: %s", o.path, err, line)
		}
		rec := oracleRecord{Kind: kind.Kind}
		switch kind.Kind {
		case "call":
			if err = json.Unmarshal(line, &rec.call); err != nil {
				// An effect bound to other types (the TypeScript server,
				// which does not check its input schema, takes "100"
				// for amount) is no effect the oracle can match: Effect
				// stays nil, which check (ii) reports as a violation.
				var loose struct {
					callRecord
					Effect json.RawMessage `json:"effect"`
				}
				err = json.Unmarshal(line, &loose)
				rec.call = loose.callRecord
			}
		case "wire":
			err = json.Unmarshal(line, &rec.wire)
		default:
			err = fmt.Errorf("unknown kind %q", kind.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("oracle %s: %v: %s", o.path, err, line)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}
