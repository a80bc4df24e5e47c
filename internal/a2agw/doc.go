// Package a2agw is warden's gateway for A2A (Agent2Agent) traffic: an
// http.Handler in front of one upstream A2A agent that speaks JSON-RPC, in
// the 1.0 vocabulary (SendMessage, GetTask, ...) or the 0.3 one
// (message/send, tasks/get, ...).
//
//	client ──GET /.well-known/agent-card.json──► Handler ──GET──► upstream card
//	                                             │  strict JSON, JWS signatures (CardKeys),
//	                                             │  pin (JCS SHA-256), rewrite URLs → PublicURL
//	       ◄──────────── attested card ──────────┘
//
//	client ──POST JSON-RPC──► Authenticate (principal)
//	                          jsonrpc.Decode (duplicate keys, UTF-8, depth, size, exact members)
//	                          method-policy ► card ► delegation (INV-7) ► consent, taint (Flow)   first denial wins
//	                          Record(client event)       error ⇒ refused (fail-secure)
//	                          POST the exact validated bytes ──► upstream agent
//	       ◄── JSON answer, or SSE event by event: each decoded strictly, a response
//	           to this request's id, recorded and shown to Flow before it is written
//
// Every refusal is a JSON-RPC error whose data is a jsonrpc.Detail naming
// the stage (listener, auth, wire, method-policy, card, delegation, consent,
// taint, audit, upstream) and the rule. A delegation refusal has rule "INV-7", the failed
// check in "step" and the offending hop in "path". docs/a2a.md describes
// the delegation format, card pinning and the configuration.
//
// Concurrency: a Handler is safe for concurrent use; see Handler for what
// its mutex guards. Options.Record is called concurrently, from the
// goroutine serving each request, on a context the client cannot cancel.
package a2agw
