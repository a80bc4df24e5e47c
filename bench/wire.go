package main

// The wire contract's cost (issue 15): every message warden relays passes
// the strict decoder, which refuses member names that fold together, names
// warden interprets spelled in another case, methods that fold to known
// ones, and requests sent as notifications; and every forwarded message
// loses warden's own _meta members. Measured per message on the bench's echo
// call, as the go-sdk client sends it.

import (
	"encoding/json"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// echoCall is the bench's echo call as the go-sdk client writes it, and the
// same with a token in warden's namespace, as a client that sends its token
// on every call would.
var (
	echoCall   = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}`)
	echoTokend = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"},` +
		`"_meta":{"progressToken":"p-17","io.agentwarden/token":"eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoid3p0K2p3dCJ9.e30.c2ln"}}}`)
)

func benchWire(add func(Result), rounds int) {
	const n = 20000
	per := func(f func()) []time.Duration {
		var d []time.Duration
		for range rounds {
			for range n {
				start := time.Now()
				f()
				d = append(d, time.Since(start))
			}
		}
		return d
	}
	decode := per(func() {
		if _, err := jsonrpc.Decode(echoCall, jsonrpc.Limits{}); err != nil {
			panic(err)
		}
	})
	p50 := us(pct(decode, 50))
	add(target(Result{Name: "wire rule: strict decode of the echo call, p50", Value: p50, Unit: "µs", Target: "≤ 10 µs",
		Note: "the whole strict decoder with every wire rule (exact and folded duplicates, member names warden interprets, method case, requests as notifications), per message; the rule's own share is part of it"}, p50 <= 10))
	tokened, err := jsonrpc.Decode(echoTokend, jsonrpc.Limits{})
	if err != nil || !tokened.WardenMeta {
		panic("the tokened echo call must decode with warden's _meta marked")
	}
	strip := per(func() { tokened.WithoutWardenMeta() })
	add(Result{Name: "wire rule: removing warden's _meta from a tokened echo call, p50", Value: us(pct(strip, 50)), Unit: "µs",
		Note: "paid only by messages that carry an io.agentwarden/ member in params._meta"})
	std := per(func() {
		var v map[string]any
		if err := json.Unmarshal(echoCall, &v); err != nil {
			panic(err)
		}
	})
	add(Result{Name: "reference: encoding/json of the echo call into a map, p50", Value: us(pct(std, 50)), Unit: "µs",
		Note: "what a lenient Go peer spends reading the same bytes, side by side in this run"})
}
