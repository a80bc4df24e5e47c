package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/zerotrust"
)

const transferArgs = `{"recipient":"vendor@example.com","amount":1000,"account_id":"ACC_123"}`

type ztFixture struct {
	ring  *zerotrust.KeyRing
	stage ZeroTrust
}

func newZT(t *testing.T, st store.Store) *ztFixture {
	t.Helper()
	ring, err := zerotrust.LoadKeyRing(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Rotate("EdDSA"); err != nil {
		t.Fatal(err)
	}
	if st == nil {
		st = store.NewMemory()
		t.Cleanup(func() { st.Close() })
	}
	return &ztFixture{ring: ring, stage: ZeroTrust{
		Keys: ring, Store: establishedStore{st},
		Requires: mustList(t, []string{"transfer_funds"}, nil),
		Subject:  func(*Call) (string, bool) { return "alice", true },
		Skew:     2 * time.Second,
	}}
}

// establishedStore is st as if it had been running for an hour: its epoch
// lies an hour back. The stage's tests present tokens issued a moment after
// their store was made, which the epoch rule rightly refuses (they are
// within the skew of a new epoch); they test everything else, and
// zerotrust_binding_test.go tests the epoch.
type establishedStore struct{ store.Store }

func (s establishedStore) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	ok, err := s.Consume(ctx, ns, id, expires)
	return ok, time.Now().Add(-time.Hour), err
}

func (f *ztFixture) token(t *testing.T, sub, tool, args string) string {
	t.Helper()
	tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: sub, Upstream: "up", Tool: tool, Arguments: []byte(args)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func call(id, tool, args, token string) string {
	meta := `{"progressToken":"p1"}`
	if token != "" {
		meta = `{"progressToken":"p1","io.agentwarden/token":"` + token + `"}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,"_meta":` + meta + `}}`
}

func TestZeroTrustForwardsTheCanonicalCallOnce(t *testing.T) {
	f := newZT(t, nil)
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	tok := f.token(t, "alice", "transfer_funds", transferArgs)

	h.send(h.client, call("1", "transfer_funds", transferArgs, tok))
	got := h.recv(h.upstream)
	want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"},"_meta":{"progressToken":"p1"}}}`
	if string(got.Raw) != want {
		t.Fatalf("upstream got\n%s\nwant the canonical arguments and no token:\n%s", got.Raw, want)
	}
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	h.recv(h.client)

	// The same token again: refused, and the upstream sees nothing.
	h.send(h.client, call("2", "transfer_funds", transferArgs, tok))
	if _, d := detailOf(t, h.recv(h.client)); d.Stage != "zero-trust" || d.Rule != "INV-4" {
		t.Fatalf("replay: detail %+v, want zero-trust INV-4", d)
	}
	h.nothing(h.upstream, "a replayed token")
}

func TestZeroTrustRefusals(t *testing.T) {
	f := newZT(t, nil)
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	good := f.token(t, "alice", "transfer_funds", transferArgs)
	cases := []struct {
		name, msg, rule string
	}{
		{"no token", call("1", "transfer_funds", transferArgs, ""), "token-missing"},
		{"one changed amount", call("2", "transfer_funds", `{"recipient":"vendor@example.com","amount":1001,"account_id":"ACC_123"}`, good), "INV-3"},
		{"another tool", call("3", "transfer_funds", transferArgs, f.token(t, "alice", "get_balance", transferArgs)), "INV-1"},
		{"another user", call("4", "transfer_funds", transferArgs, f.token(t, "mallory", "transfer_funds", transferArgs)), "INV-1"},
		{"garbage", call("5", "transfer_funds", transferArgs, "not.a.token"), "signature"},
	}
	for _, tc := range cases {
		h.send(h.client, tc.msg)
		_, d := detailOf(t, h.recv(h.client))
		if d.Stage != "zero-trust" || d.Rule != tc.rule {
			t.Errorf("%s: detail %+v, want rule %s", tc.name, d, tc.rule)
		}
		// The data names the invariant and the standard's step, not only
		// the message.
		if strings.HasPrefix(tc.rule, "INV-") && (d.Invariant != tc.rule || d.Step == "") {
			t.Errorf("%s: data %+v lacks invariant %s and its step", tc.name, d, tc.rule)
		}
	}
	h.nothing(h.upstream, "refused calls")

	// The token was not burned by the failed attempts (consume runs last):
	// with the approved arguments it still works, once.
	h.send(h.client, call("6", "transfer_funds", transferArgs, good))
	if got := h.recv(h.upstream); got.ID.Raw() != "6" {
		t.Fatalf("upstream got %s", got.Raw)
	}

	// A tool that needs no token passes with its bytes untouched.
	plain := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"b":1, "a":2}}}`
	h.send(h.client, plain)
	if got := h.recv(h.upstream); string(got.Raw) != plain {
		t.Fatalf("echo was rewritten: %s", got.Raw)
	}
}

// failingStore cannot decide anything.
type failingStore struct{}

func (failingStore) Consume(context.Context, string, string, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}
func (failingStore) Close() error { return nil }

func TestZeroTrustFailsSecureWhenTheStoreIsDown(t *testing.T) {
	f := newZT(t, failingStore{})
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	h.send(h.client, call("1", "transfer_funds", transferArgs, f.token(t, "alice", "transfer_funds", transferArgs)))
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "store" {
		t.Fatalf("detail %+v, want rule store", d)
	}
	h.nothing(h.upstream, "a call whose token could not be consumed")
}

// TestZeroTrustConcurrentPresentation: on each replay store, a thousand
// goroutines present the same token for the same call to the stage, and a
// hundred relays sharing the stage get it at once from their clients:
// exactly one presentation gets through, and the upstream sees the call once.
func TestZeroTrustConcurrentPresentation(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return store.NewMemory() }},
		{"sqlite", func(t *testing.T) store.Store {
			st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "replay.db"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"redis", func(t *testing.T) store.Store {
			rd := testenv.StartRedis(t, false) // skips when redis-server is missing
			st, err := store.OpenRedis(context.Background(), rd.URL)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			t.Cleanup(func() { st.Close() })
			f := newZT(t, st)
			// The test is of atomic consumption, not of the deadline: on a
			// loaded 2-core machine, 1000 signature checks and a durable
			// commit can take longer than the default 500 ms, and a
			// timed-out first use rightly lets none pass.
			f.stage.StoreTimeout = time.Minute
			t.Run("stage", func(t *testing.T) { concurrentStageChecks(t, f, 1000) })
			t.Run("relays", func(t *testing.T) { concurrentRelayCalls(t, f, 100) })
		})
	}
}

// concurrentStageChecks presents one token to f.stage from n goroutines.
func concurrentStageChecks(t *testing.T, f *ztFixture, n int) {
	tok := f.token(t, "alice", "transfer_funds", transferArgs)
	raw := call("1", "transfer_funds", transferArgs, tok)
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
			if err != nil {
				t.Error(err)
				return
			}
			c, denial := newCall(msg, "up", "")
			if denial != nil {
				t.Error(denial.Reason)
				return
			}
			if NewPipeline(f.stage).Check(context.Background(), c) == nil {
				passed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := passed.Load(); n != 1 {
		t.Fatalf("%d presentations of one token passed, want exactly 1", n)
	}
}

// concurrentRelayCalls starts n relays whose pipelines share f.stage (and so
// its store), each with an upstream that runs the tool, and has every client
// send the same call with the same token at once.
func concurrentRelayCalls(t *testing.T, f *ztFixture, n int) {
	tok := f.token(t, "alice", "transfer_funds", transferArgs)
	raw := call("7", "transfer_funds", transferArgs, tok)
	msg, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	result, _ := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"txn"}]}}`), jsonrpc.Limits{})
	var ran, succeeded, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
		// The upstream: every tools/call it reads runs the tool.
		go func() {
			m, err := h.upstream.Read(context.Background())
			if err != nil {
				return // the relay closed: this client's call never came
			}
			if m.Method == "tools/call" {
				ran.Add(1)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h.upstream.Write(ctx, result)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			<-start
			if err := h.client.Write(ctx, msg); err != nil {
				t.Error(err)
				return
			}
			reply, err := h.client.Read(ctx)
			switch {
			case err != nil:
				t.Errorf("no answer: %v", err)
			case reply.Error != nil:
				refused.Add(1)
			default:
				succeeded.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if s, r, u := succeeded.Load(), refused.Load(), ran.Load(); s != 1 || r != int64(n-1) || u != 1 {
		t.Fatalf("%d clients presenting one token: %d succeeded, %d refused, the upstream ran the tool %d times; want 1, %d, 1",
			n, s, r, u, n-1)
	}
}

// TestZeroTrustPersona: with a persona required (step 3a), a token for
// another persona, or none, is refused; the right one passes, and a token
// warden issues on approval carries it.
func TestZeroTrustPersona(t *testing.T) {
	f := newZT(t, nil)
	f.stage.Persona = "personaAgenticProvider"
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	issue := func(persona string) string {
		tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds",
			Arguments: []byte(transferArgs), Persona: persona})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, p := range []string{"", "personaEndUser"} {
		h.send(h.client, call("1", "transfer_funds", transferArgs, issue(p)))
		if _, d := detailOf(t, h.recv(h.client)); d.Step != "3a" {
			t.Errorf("persona %q: %+v, want a refusal at step 3a", p, d)
		}
	}
	h.send(h.client, call("2", "transfer_funds", transferArgs, issue("personaAgenticProvider")))
	if got := h.recv(h.upstream); got.ID.Raw() != "2" {
		t.Fatalf("upstream got %s", got.Raw)
	}

	// A held call, once approved, passes the persona check too.
	q := approval.New(time.Minute)
	f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	h2 := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	h2.send(h2.client, call("3", "transfer_funds", transferArgs, ""))
	q.Decide(waitPending(t, q).ID, true, "bob", "")
	if got := h2.recv(h2.upstream); got.ID.Raw() != "3" {
		t.Fatalf("approved call: upstream got %s", got.Raw)
	}
}

// sendWithHeader sends a call whose token (if any) is in params._meta and
// whose HTTP headers are h, as the listener passes them on.
func (h *harness) sendWithHeader(raw string, hdr map[string][]string) {
	h.t.Helper()
	msg, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		h.t.Fatal(err)
	}
	msg.Header = hdr
	if err := h.client.Write(context.Background(), msg); err != nil {
		h.t.Fatal(err)
	}
}

// The token may travel in the Warden-Invocation header instead of _meta;
// two different tokens are refused rather than guessed between.
func TestTokenInHTTPHeader(t *testing.T) {
	f := newZT(t, nil)
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	tok := f.token(t, "alice", "transfer_funds", transferArgs)
	h.sendWithHeader(call("1", "transfer_funds", transferArgs, ""), map[string][]string{HeaderToken: {tok}})
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("upstream got %s, want the call with the header's token", got.Raw)
	}
	// The header's token is used up like any other.
	h.sendWithHeader(call("2", "transfer_funds", transferArgs, ""), map[string][]string{HeaderToken: {tok}})
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "INV-4" {
		t.Fatalf("replayed header token: %+v", d)
	}
	other := f.token(t, "alice", "transfer_funds", transferArgs)
	third := f.token(t, "alice", "transfer_funds", transferArgs)
	for name, tc := range map[string]struct {
		meta string
		hdr  []string
	}{
		"header and _meta differ": {other, []string{third}},
		"header twice":            {"", []string{other, third}},
	} {
		h.sendWithHeader(call("3", "transfer_funds", transferArgs, tc.meta), map[string][]string{HeaderToken: tc.hdr})
		if _, d := detailOf(t, h.recv(h.client)); d.Rule != "ambiguous-credential" {
			t.Errorf("%s: %+v", name, d)
		}
	}
	h.nothing(h.upstream, "a call with ambiguous tokens")
	// The same token in both places is not ambiguous.
	h.sendWithHeader(call("4", "transfer_funds", transferArgs, other), map[string][]string{HeaderToken: {other}})
	if got := h.recv(h.upstream); got.ID.Raw() != "4" {
		t.Fatalf("upstream got %s", got.Raw)
	}
}

// Binding mode C: a hybrid token binds the tool's inputSchema as the
// upstream declared it; after the tool changes (a rug pull), tokens issued
// for the old definition are refused.
func TestHybridTokenAndAChangedTool(t *testing.T) {
	f := newZT(t, nil)
	idx := newToolIndex()
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage), Tools: idx.info()})
	schema := `{"type":"object","properties":{"amount":{"type":"number"}}}`
	idx.learn("tools/list", []byte(`{"tools":[{"name":"transfer_funds","inputSchema":`+schema+`}]}`))
	sh, _ := zerotrust.SchemaHash([]byte(schema))
	hybrid := func() string {
		tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds",
			Arguments: []byte(transferArgs), BindingMode: zerotrust.BindingHybrid, SchemaHash: sh})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	h.send(h.client, call("1", "transfer_funds", transferArgs, hybrid()))
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("upstream got %s", got.Raw)
	}
	// The server now describes the tool differently.
	idx.learn("tools/list", []byte(`{"tools":[{"name":"transfer_funds","inputSchema":{"type":"object","properties":{"amount":{"type":"number"},"memo":{"type":"string"}}}}]}`))
	h.send(h.client, call("2", "transfer_funds", transferArgs, hybrid()))
	m := h.recv(h.client)
	if _, d := detailOf(t, m); d.Rule != "INV-3" || !strings.Contains(m.Error.Message, "the tool changed") {
		t.Fatalf("a hybrid token for the old definition: %s", m.Raw)
	}
}
