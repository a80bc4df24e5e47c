//go:build integration

package gateway

// Single use that fails closed, on a real redis-server (testenv.StartRedis,
// loopback only, stopped and killed by the pid of the process the test
// started): a server that stops answering mid-call, and a server that
// comes back empty, must never let a token run twice.

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// redisZT is a zero-trust stage on a real Redis store.
type redisZT struct {
	*ztFixture
	rd     *testenv.Redis
	client *redis.Client // the test's own connection to the server
}

// newRedisZT starts a server (with AOF when aof) whose epoch lies an hour
// back, as a store that has served for a while, and a stage on it that
// allows skew.
func newRedisZT(t *testing.T, aof bool, skew time.Duration) *redisZT {
	t.Helper()
	rd := testenv.StartRedis(t, aof)
	opts, err := redis.ParseURL(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	if err := client.Set(t.Context(), "warden:epoch", time.Now().Add(-time.Hour).UnixMilli(), 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenRedis(t.Context(), rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newZT(t, nil)
	f.stage.Store, f.stage.Skew = st, skew // the server's own epoch, not establishedStore's
	return &redisZT{ztFixture: f, rd: rd, client: client}
}

// present runs the stage on a transfer_funds call carrying tok. A refusal
// because the store could not be reached (a restarted server the client
// has not reconnected to yet) is retried: it consumed nothing.
func (r *redisZT) present(t *testing.T, tok string) *Denial {
	t.Helper()
	// The client's reconnection shows nowhere but in the next answer, so
	// this polls, until a deadline rather than a count of tries.
	var d *Denial
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if d = checkOn(t, t.Context(), r.stage, "up", "", tok); d == nil || d.Rule != "store" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store still cannot be reached 10 s after its restart: %s", d.Reason)
		}
	}
}

// restartEmpty kills the server and starts it again without its data.
func (r *redisZT) restartEmpty(t *testing.T) {
	t.Helper()
	r.rd.Kill()
	r.rd.Start(t)
}

// epoch is the server's epoch (warden:epoch), as the stage's consumptions
// left it.
func (r *redisZT) epoch(t *testing.T) time.Time {
	t.Helper()
	v, err := r.client.Get(t.Context(), "warden:epoch").Result()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

// serverPID is the process id of the server, as it reports it: the
// redis-server this test started.
func (r *redisZT) serverPID(t *testing.T) int {
	t.Helper()
	info, err := r.client.Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil || pid <= 1 {
				t.Fatalf("process_id %q", v)
			}
			return pid
		}
	}
	t.Fatalf("INFO server has no process_id:\n%s", info)
	return 0
}

// Redis stopped (SIGSTOP) while a call waits for it: the call is refused
// within store_timeout with rule store-timeout, and once the server runs
// again (SIGCONT) the same token is still refused, whatever the server
// recorded.
func TestZeroTrustRedisStoppedMidCall(t *testing.T) {
	r := newRedisZT(t, false, 2*time.Second)
	const timeout = 200 * time.Millisecond
	r.stage.StoreTimeout = timeout
	wantRule(t, "a call before the server stops", r.present(t, r.token(t, "alice", "transfer_funds", transferArgs)), "")

	pid := r.serverPID(t)
	stopped := false
	t.Cleanup(func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT) // then the cleanup's SIGKILL ends it
		}
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = true
	tok := r.token(t, "alice", "transfer_funds", transferArgs)
	start := time.Now()
	d := checkOn(t, t.Context(), r.stage, "up", "", tok)
	took := time.Since(start)
	wantRule(t, "a call while the server is stopped", d, "store-timeout")
	if took > timeout+300*time.Millisecond {
		t.Fatalf("refused after %v, want within store_timeout (%v)", took, timeout)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for r.client.Ping(ctx).Err() != nil { // a resumed process shows nowhere but in its answers
		if ctx.Err() != nil {
			t.Fatal("the server does not answer 5 s after SIGCONT")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantRule(t, "the same token once the server runs again", r.present(t, tok), "INV-4")
	wantRule(t, "a fresh token once the server runs again", r.present(t, r.token(t, "alice", "transfer_funds", transferArgs)), "")
}

// Redis restarted empty within the second its token was issued and used:
// the new epoch lies in the token's own second, and whole seconds would
// take the token for newer than it. It is refused.
func TestZeroTrustRedisRestartedEmptyInTheSameSecond(t *testing.T) {
	r := newRedisZT(t, false, 0)
	for attempt := 1; ; attempt++ {
		// Start just after a second begins: the issue, the use, the
		// restart and the replay must fit in that second.
		// Kept: token times have whole seconds of the real clock, which
		// no bubble reaches across a real server; this waits exactly to
		// the start of the next one.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
		tok := r.token(t, "alice", "transfer_funds", transferArgs)
		iat := claimsOf(t, tok).IssuedAt
		wantRule(t, "the first use", r.present(t, tok), "")
		r.restartEmpty(t)
		wantRule(t, "the token after an empty restart", r.present(t, tok), "epoch")
		if e := r.epoch(t); e.Unix() == iat {
			return // the case whole seconds got wrong, refused
		} else if attempt == 3 {
			t.Fatalf("the restart never fit in the token's second (iat %d, new epoch %v): cannot test it here", iat, e)
		}
	}
}

// An issuer whose clock runs ahead (within the skew) stamps a token later
// than it was issued: used before an empty restart, it is refused after,
// though its iat is after the new epoch.
func TestZeroTrustRedisIssuerClockAhead(t *testing.T) {
	const skew = 5 * time.Second
	r := newRedisZT(t, false, skew)
	tok := issuedAhead(t, r.ring, 3*time.Second)
	wantRule(t, "the first use", r.present(t, tok), "")
	r.restartEmpty(t)
	d := r.present(t, tok)
	wantRule(t, "the token after an empty restart", d, "epoch")
	if iat := claimsOf(t, tok).IssuedAt; r.epoch(t).Unix() >= iat {
		t.Fatalf("new epoch %v is not before the token's iat %d: the test does not show the skew", r.epoch(t), iat)
	}
}

// issuedAhead is a token for alice's transfer signed by ring as an issuer
// whose clock runs ahead by ahead would sign it: iat, nbf and exp later.
func issuedAhead(t *testing.T, ring *zerotrust.KeyRing, ahead time.Duration) string {
	t.Helper()
	_, c, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds",
		Arguments: []byte(transferArgs)})
	if err != nil {
		t.Fatal(err)
	}
	s := int64(ahead / time.Second)
	c.IssuedAt, c.NotBefore, c.Expiry = c.IssuedAt+s, c.NotBefore+s, c.Expiry+s
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ring.Signer()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(zerotrust.TokenType))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
