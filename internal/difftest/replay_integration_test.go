//go:build integration

package difftest

import (
	"fmt"
	"sync"
	"testing"
)

// TestTokenReplayRace: one invocation token sent at the same moment in
// several POSTs over two sessions runs transfer_funds exactly once on each
// real SDK (INV-4), and every other copy is refused as a second use. The
// oracle is the SDK's handler runs, not warden's answers: a store whose
// consume is a check-then-set would let two copies through here.
func TestTokenReplayRace(t *testing.T) {
	build(t)
	const copies = 6
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			g := startGateway(t, up)
			o := &oracleReader{path: g.oracle}
			var sessions [2]*session
			for i := range sessions {
				s, err := g.open(defaultRev)
				if err != nil {
					t.Fatalf("open: %v\n%s", err, g.log())
				}
				sessions[i] = s
			}
			if _, err := o.next(); err != nil { // the handshakes
				t.Fatal(err)
			}
			token, err := g.issueToken(TokenSpec{Tool: "transfer_funds", Args: argsA})
			if err != nil {
				t.Fatal(err)
			}
			replies := make([]reply, copies)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range copies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"copy-%d","method":"tools/call","params":{"name":"transfer_funds","arguments":%s,"_meta":{"io.agentwarden/token":%q}}}`,
						i, argsA, token)
					<-start
					replies[i] = sessions[i%2].post([]byte(msg))
				}()
			}
			close(start)
			wg.Wait()
			for _, s := range sessions {
				if err := s.sync(); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := o.next()
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, rec := range recs {
				if rec.Kind == "call" && rec.call.Tool == "transfer_funds" {
					ran++
				}
			}
			if ran != 1 {
				t.Errorf("%s ran transfer_funds %d times for one token sent %d times at once, want exactly once", up.name, ran, copies)
			}
			succeeded, replays := 0, 0
			for i, r := range replies {
				switch {
				case hasResult(r):
					succeeded++
				case refused(r, "INV-4"):
					replays++
				default:
					t.Errorf("copy %d: answered %s (status %d, %v), want a result or an INV-4 refusal", i, joinMsgs(r.msgs), r.status, r.err)
				}
			}
			if succeeded != 1 || replays != copies-1 {
				t.Errorf("%d copies answered with a result and %d refused as a second use, want 1 and %d", succeeded, replays, copies-1)
			}
		})
	}
}
