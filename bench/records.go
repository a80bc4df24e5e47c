package main

// Benchmarks of issue 5 (audit, telemetry, security processor) and the
// Tier 2 row of issue 3.

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

func benchRecords(ctx context.Context, add func(Result), rounds, perWorker, workers int) {
	dir, _ := os.MkdirTemp("", "warden-bench-records-")
	defer os.RemoveAll(dir)

	// Durable audit appends from many sessions at once (group commit).
	l, err := audit.Open(ctx, audit.KindSQLite, filepath.Join(dir, "append.db"), audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	const appenders, each = 64, 500
	var wg sync.WaitGroup
	start := time.Now()
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := l.Append(ctx, audit.Record{Time: time.Now(), Upstream: "demo", Method: "tools/call", Tool: "echo",
					RequestID: "1", Decision: audit.Allow, Direction: "client"}); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	rate := float64(appenders*each) / time.Since(start).Seconds()
	l.Close()
	add(target(Result{Name: "audit: durable appends, SQLite, 64 sessions", Value: rate, Unit: "records/s", Target: "≥ 20,000/s"}, rate >= 2e4))
	wall, cpu := fsyncCost(dir)
	add(Result{Name: "disk: overwrite 8 KiB and fsync, median", Value: wall, Unit: "µs",
		Note: "the floor of one durable step; every call through a gateway with an audit log waits for two in a row (its request's record, then its answer's)"})
	add(Result{Name: "disk: CPU per overwrite and fsync", Value: cpu, Unit: "µs",
		Note: "CPU time, nearly all of it the kernel's, that one fsync costs on this machine whatever is synced"})

	// One record per commit, as a call's records mostly are: at the 8
	// sessions of the throughput rows, records arrive about one per
	// commit's duration, so group commit has little to share.
	l, err = audit.Open(ctx, audit.KindSQLite, filepath.Join(dir, "serial.db"), audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	const serial = 2000
	c0 := cpuTime()
	for range serial {
		if _, err := l.Append(ctx, audit.Record{Upstream: "demo", Method: "tools/call", Tool: "echo",
			RequestID: "1", Decision: audit.Allow, Direction: "client"}); err != nil {
			log.Fatal(err)
		}
	}
	add(Result{Name: "audit: CPU per durable append, one record per commit", Value: us(cpuTime()-c0) / serial, Unit: "µs",
		Note: "SQLite transaction with its fsync, one appender"})
	l.Close()

	// Throughput with all telemetry on against the same gateway with none.
	upstream := serveDemoHTTP()
	plain := serveGateway(upstream)
	// The gateway's audit log on the backend a configuration gets by
	// default, the group-commit JSONL file.
	l, err = audit.Open(ctx, audit.KindJSONL, filepath.Join(dir, "gateway.jsonl"), audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	spanOut, _ := telemetry.NewSpanWriter(io.Discard)
	// Spans, OCSF and metrics as a configured gateway records them
	// (internal/assemble): spans are built on the Recorder's goroutine,
	// which hands them to the exporter in batches.
	queue := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{})
	defer queue.Close(ctx)
	spans := telemetry.NewRecorder(telemetry.Options{SpanExporter: spanOut, OCSFSink: queue, Deferred: 4096})
	defer spans.Close(ctx) // before the queue (defers run last first); shuts the exporter down
	full := serveRecordedGateway(upstream, &gateway.Records{Audit: l, Propagate: true, Transport: telemetry.TransportStreamableHTTP,
		Spans: spans, Metrics: &gateway.Metrics{Recording: spans}})
	spansOnly := serveRecordedGateway(upstream, &gateway.Records{Propagate: true, Transport: telemetry.TransportStreamableHTTP,
		Spans: spans, Metrics: &gateway.Metrics{Recording: spans}})
	auditOnly := serveRecordedGateway(upstream, &gateway.Records{Audit: l})
	// Each round measures the four gateways one after another, in a
	// different order each time, so that all four see the same background
	// noise; besides calls/s, the process's CPU time per call (client,
	// gateway and upstream together), which the box's other load disturbs
	// less.
	urls := [4]string{plain, full, spansOnly, auditOnly}
	var tps, cpus [4][]float64
	calls := float64(workers * (perWorker / 2))
	for round := range rounds {
		for k := range urls {
			i := (k + round) % len(urls)
			c0 := cpuTime()
			tps[i] = append(tps[i], tokenThroughput(ctx, nil, urls[i], false, workers, perWorker/2))
			cpus[i] = append(cpus[i], (cpuTime()-c0).Seconds()*1e6/calls)
		}
	}
	p, f, sp, au := median(tps[0]), median(tps[1]), median(tps[2]), median(tps[3])
	cp, cf, cs, ca := median(cpus[0]), median(cpus[1]), median(cpus[2]), median(cpus[3])
	add(Result{Name: "tools/call through warden, telemetry off", Value: p, Unit: "calls/s"})
	add(Result{Name: "tools/call through warden, all telemetry on", Value: f, Unit: "calls/s",
		Note: "audit on the default group-commit JSONL file (durable), spans in both conventions to a batch exporter, OCSF events, metrics, trace propagation"})
	// Why the budget is missed, from this run's rows: the durable records a
	// call waits for against the 10% of the whole path's CPU.
	budget := cp / 10
	why := fmt.Sprintf("the 10%% budget is %.0f µs of CPU per call (\"CPU per call, telemetry off\" is the whole path: client, gateway and upstream); "+
		"durable audit alone adds %.0f µs (\"CPU per call added, durable audit only\": every call waits for two records, the request's before it is forwarded and the answer's before it is returned), "+
		"spans + OCSF + metrics alone %.0f µs", budget, ca-cp, cs-cp)
	add(judge(Result{Name: "telemetry cost (1 − on/off)", Value: 1 - f/p, Unit: "", Target: "≤ 0.10"}, 1-f/p <= 0.10, why))
	add(Result{Name: "telemetry cost, spans + OCSF + metrics only", Value: 1 - sp/p, Unit: ""})
	add(Result{Name: "telemetry cost, durable audit only", Value: 1 - au/p, Unit: ""})
	add(Result{Name: "CPU per call, telemetry off", Value: cp, Unit: "µs",
		Note: "CPU time of the whole process (client, gateway, upstream) per call"})
	add(Result{Name: "CPU per call, all telemetry on", Value: cf, Unit: "µs"})
	add(Result{Name: "CPU per call added, spans + OCSF + metrics only", Value: cs - cp, Unit: "µs"})
	add(Result{Name: "CPU per call added, durable audit only", Value: ca - cp, Unit: "µs"})
	if st := queue.Stats(); st.Dropped > 0 {
		add(Result{Name: "OCSF events dropped by the bounded queue", Value: float64(st.Dropped), Unit: "events"})
	}

	// The security processor on our labelled corpus.
	rep, err := secproc.RunCorpus()
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []struct {
		name string
		m    secproc.Metrics
	}{{"held-out", rep.HeldOut}, {"all", rep.All}} {
		c := m.m.Overall
		add(target(Result{Name: "security processor recall, " + m.name, Value: c.Recall, Unit: "",
			Target: "≥ 0.95", Note: fmt.Sprintf("%d events; corpus and detectors written by us", c.TP+c.FP+c.TN+c.FN)}, c.Recall >= 0.95))
		add(target(Result{Name: "security processor false-positive rate, " + m.name, Value: c.FPR, Unit: "",
			Target: "≤ 0.02"}, c.FPR <= 0.02))
		add(Result{Name: "security processor precision, " + m.name, Value: c.Precision, Unit: ""})
	}
	benchTier2(add, dir)
}

// fsyncCost overwrites 8 KiB of a file in dir and fsyncs it, 200 times,
// and returns the median time of one and the mean CPU time of the process
// per one: what one commit of the audit log's WAL costs at least.
func fsyncCost(dir string) (wallUS, cpuUS float64) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	if _, err := f.Write(make([]byte, 128*len(buf))); err != nil {
		log.Fatal(err)
	}
	f.Sync()
	const n = 200
	var ds []time.Duration
	c0 := cpuTime()
	for i := range n {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i%128*len(buf))); err != nil {
			log.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			log.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	return us(pct(ds, 50)), us(cpuTime()-c0) / n
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serveRecordedGateway is serveGateway with a Recorder.
func serveRecordedGateway(upstream string, rec gateway.Recorder) string {
	g, err := gateway.New(gateway.Options{Recorder: rec, Upstreams: []gateway.Upstream{{
		Name: "demo", Transport: "http",
		Dial: func(context.Context, bool) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: upstream, Name: "demo"}), nil
		},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	ln := listen()
	go http.Serve(ln, g.Handler())
	return "http://" + ln.Addr().String() + "/mcp"
}

// benchTier2 compares Tier 2 validation (the token and its DPoP proof, with
// every claim and binding check) with its two signature checks alone.
func benchTier2(add func(Result), dir string) {
	ring, err := zerotrust.LoadKeyRing(filepath.Join(dir, "keys2"))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		log.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jkt, _ := dpop.Thumbprint(&jose.JSONWebKey{Key: &key.PublicKey})
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(benchArgs), DPoPJKT: jkt})
	if err != nil {
		log.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:8787/mcp")
	proof, err := dpop.NewProof(key, dpop.Request{Method: "POST", URL: u, AccessToken: token}, "bench", time.Now())
	if err != nil {
		log.Fatal(err)
	}
	hdr := http.Header{"Dpop": {proof}}
	expect := zerotrust.Expect{Sub: "alice", Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(benchArgs), Now: time.Now(), Skew: time.Second}
	full := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			claims, verr := zerotrust.Verify(ring, token, expect)
			if verr != nil {
				b.Fatal(verr)
			}
			p, perr := dpop.Verify(hdr, dpop.Request{Method: "POST", URL: u, AccessToken: token}, dpop.Options{})
			if perr != nil || !p.BoundTo(claims.Confirmation.JKT) {
				b.Fatal(perr)
			}
		}
	})
	tparts, pparts := strings.Split(token, "."), strings.Split(proof, ".")
	tsig, _ := base64.RawURLEncoding.DecodeString(tparts[2])
	psig, _ := base64.RawURLEncoding.DecodeString(pparts[2])
	signer, _ := ring.Signer()
	pub := signer.Key.(jose.JSONWebKey).Key.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
	tin, pin := []byte(tparts[0]+"."+tparts[1]), sha256.Sum256([]byte(pparts[0]+"."+pparts[1]))
	r, s := new(big.Int).SetBytes(psig[:32]), new(big.Int).SetBytes(psig[32:])
	bare := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, tin, tsig) || !ecdsa.Verify(&key.PublicKey, pin[:], r, s) {
				b.Fatal("signature")
			}
		}
	})
	add(Result{Name: "zero-trust: Tier 2 signature checks alone (Ed25519 + ES256)", Value: float64(bare.NsPerOp()) / 1000, Unit: "µs"})
	add(Result{Name: "zero-trust: full Tier 2 validation (token + DPoP, no consume)", Value: float64(full.NsPerOp()) / 1000, Unit: "µs"})
	ratio := float64(full.NsPerOp()) / float64(bare.NsPerOp())
	add(target(Result{Name: "zero-trust: Tier 2 validation / its signature checks", Value: ratio, Unit: "×", Target: "≤ 1.3"}, ratio <= 1.3))
}
