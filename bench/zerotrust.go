package main

// Zero-trust measurements (issue 3): validation against its signature
// check, consumption throughput per store, and tools/call with a token
// against the plain relay.

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

const benchArgs = `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`

func benchZeroTrust(ctx context.Context, add func(Result), rounds, perWorker int) {
	dir, _ := os.MkdirTemp("", "warden-bench-zt-")
	defer os.RemoveAll(dir)
	ring, err := zerotrust.LoadKeyRing(filepath.Join(dir, "keys"))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		log.Fatal(err)
	}

	// Tier 1 validation against the bare Ed25519 check of the same token.
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Tool: "transfer_funds", Arguments: []byte(benchArgs)})
	if err != nil {
		log.Fatal(err)
	}
	parts := strings.Split(token, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	signingInput := []byte(parts[0] + "." + parts[1])
	signer, _ := ring.Signer()
	pub := signer.Key.(jose.JSONWebKey).Key.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
	expect := zerotrust.Expect{Sub: "alice", Tool: "transfer_funds", Arguments: []byte(benchArgs), Now: time.Now(), Skew: time.Second}
	full := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if _, verr := zerotrust.Verify(ring, token, expect); verr != nil {
				b.Fatal(verr)
			}
		}
	})
	bare := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, signingInput, sig) {
				b.Fatal("signature")
			}
		}
	})
	add(Result{Name: "zero-trust: Ed25519 signature check alone", Value: float64(bare.NsPerOp()) / 1000, Unit: "µs"})
	add(Result{Name: "zero-trust: full Tier 1 validation (no consume)", Value: float64(full.NsPerOp()) / 1000, Unit: "µs"})
	ratio := float64(full.NsPerOp()) / float64(bare.NsPerOp())
	add(target(Result{Name: "zero-trust: Tier 1 validation / signature check", Value: ratio, Unit: "×", Target: "≤ 1.3"}, ratio <= 1.3))

	// Consumption throughput and p99, 8 goroutines on distinct ids.
	mem := store.NewMemory()
	consumeBench(ctx, add, "memory", mem, 200000, 8, "≥ 2,000,000/s", 2e6)
	mem.Close()
	sq, err := store.OpenSQLite(filepath.Join(dir, "state.db"))
	if err != nil {
		log.Fatal(err)
	}
	// The durable stores commit in groups: the rate is what many sessions
	// at once get, each waiting for its own durable commit.
	consumeBench(ctx, add, "sqlite (durable)", sq, 40000, 64, "≥ 20,000/s", 2e4)
	if rd, stop := startRedis(ctx, dir); rd != nil {
		consumeBench(ctx, add, "redis (loopback, AOF everysec)", rd, 50000, 64, "≥ 50,000/s", 5e4)
		rd.Close()
		stop()
	} else {
		add(Result{Name: "zero-trust: consume, redis", Unit: "", Note: "not measured: no redis-server (run make deps)"})
	}

	// tools/call through warden with a token on SQLite, against the plain
	// relay, over HTTP keep-alive.
	upstream := serveDemoHTTP()
	plainURL := serveGateway(upstream)
	ztURL := serveZTGateway(upstream, ring, sq)
	var plainTPs, ztTPs []float64
	for range rounds {
		plainTPs = append(plainTPs, tokenThroughput(ctx, ring, plainURL, false, 4, perWorker/2))
		ztTPs = append(ztTPs, tokenThroughput(ctx, ring, ztURL, true, 4, perWorker/2))
	}
	p, z := median(plainTPs), median(ztTPs)
	add(Result{Name: "tools/call through warden, plain relay", Value: p, Unit: "calls/s"})
	add(Result{Name: "tools/call through warden, Tier 1 token on SQLite", Value: z, Unit: "calls/s"})
	add(target(Result{Name: "Tier 1 on SQLite / plain relay", Value: z / p, Unit: "×", Target: "≥ 0.6"}, z/p >= 0.6))
	sq.Close()
}

// consumeBench consumes n distinct ids from 8 goroutines and reports the
// rate and the p99 latency of one Consume.
func consumeBench(ctx context.Context, add func(Result), name string, st store.Store, n, workers int, want string, min float64) {
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	start := time.Now()
	exp := time.Now().Add(time.Minute)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				t := time.Now()
				ok, err := st.Consume(ctx, store.NSToken, fmt.Sprintf("bench-%d", i), exp)
				lat[w] = append(lat[w], time.Since(t))
				if err != nil || !ok {
					log.Fatalf("%s consume: %v %v", name, ok, err)
				}
			}
		}()
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	all := slices.Concat(lat...)
	add(target(Result{Name: "zero-trust: consume, " + name, Value: rate, Unit: "ids/s", Target: want,
		Note: fmt.Sprintf("%d goroutines, distinct ids", workers)}, rate >= min))
	add(Result{Name: "zero-trust: consume p99, " + name, Value: us(pct(all, 99)), Unit: "µs"})
}

// startRedis starts a redis-server on a unix socket in dir, if one is
// installed, and connects to it.
func startRedis(ctx context.Context, dir string) (*store.Redis, func()) {
	bin := os.Getenv("WARDEN_REDIS_SERVER")
	if bin == "" {
		bin, _ = exec.LookPath("redis-server")
	}
	if bin == "" {
		return nil, nil
	}
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "yes",
		"--appendfsync", "everysec", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, nil
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	for range 100 {
		if rd, err := store.OpenRedis(ctx, "unix://"+sock); err == nil {
			return rd, stop
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	return nil, nil
}

// serveZTGateway serves a gateway whose upstream requires a token for echo.
func serveZTGateway(upstream string, ring *zerotrust.KeyRing, st store.Store) string {
	echo, _ := config.CompilePattern("echo")
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{
		Name: "demo", Transport: "http",
		Dial: func(context.Context, bool) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: upstream, Name: "demo"}), nil
		},
		Pipeline: gateway.NewPipeline(gateway.ZeroTrust{
			Keys: ring, Store: st, Requires: config.List{Allow: []config.Pattern{echo}},
			Subject: func(*gateway.Call) (string, bool) { return "alice", true }, Skew: 5 * time.Second,
		}),
	}}})
	if err != nil {
		log.Fatal(err)
	}
	ln := listen()
	go http.Serve(ln, g.Handler())
	return "http://" + ln.Addr().String() + "/mcp"
}

// tokenThroughput makes perWorker echo calls on each of workers sessions;
// with withToken, each call carries its own token, issued before timing.
func tokenThroughput(ctx context.Context, ring *zerotrust.KeyRing, url string, withToken bool, workers, perWorker int) float64 {
	tokens := make([][]string, workers)
	if withToken {
		for w := range tokens {
			for range perWorker {
				tok, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Tool: "echo", Arguments: []byte(`{"message":"bench"}`)})
				if err != nil {
					log.Fatal(err)
				}
				tokens[w] = append(tokens[w], tok)
			}
		}
	}
	sessions := make([]*mcp.ClientSession, workers)
	for i := range sessions {
		sessions[i] = connect(ctx, httpTransport(url))
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}}
				if withToken {
					p.Meta = mcp.Meta{gateway.MetaTokenKey: tokens[w][i]}
				}
				if _, err := cs.CallTool(ctx, p); err != nil {
					log.Fatalf("echo: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, cs := range sessions {
		cs.Close()
	}
	return float64(workers*perWorker) / elapsed.Seconds()
}
