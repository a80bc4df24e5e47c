// Package attack is warden's OATF attack runtime: it executes a normalized
// OATF 0.1 document (see package oatf) against real peers and computes its
// verdict from what was exchanged.
//
// Each actor of the document runs in its own goroutine, driven by a phase
// machine (phases, triggers, extractors, entry actions, full-replacement
// state). Server actors (mcp_server, a2a_server) start first; client actors
// (mcp_client, a2a_client, ag_ui_client) begin only once every server actor
// accepts connections (the readiness gate, OATF §11.3). Every message any
// actor sends or receives is appended to one shared Trace with a global
// sequence number; indicators are evaluated against that trace after the
// run, filtered by protocol, surface, actor and direction (OATF §6).
//
// A2A peers of both generations are spoken to (0.3: message/send; 1.0:
// SendMessage), and the trace records A2A traffic in OATF's vocabulary,
// which is A2A 0.3's (see a2a.go).
//
//	         ┌─────────── Run ───────────┐
//	         │  readiness gate           │
//	servers ─┤  mcp_server  (stdio|HTTP) ├─► Trace ──► indicators ──► Verdict
//	         │  a2a_server  (HTTP)       │      ▲
//	clients ─┤  mcp_client, a2a_client,  │      │
//	         │  ag_ui_client             │      │
//	         │  extractor store (shared) │──────┘ cross-actor {{actor.name}}
//	         └───────────────────────────┘
//
// The run ends when every client actor has finished its terminal phase (or,
// for a document with server actors only, when every server actor is in its
// terminal phase and its peers have disconnected; an a2a_server, which has
// no session, once it has answered a request that arrived in its terminal
// phase), plus the grace period; it is cut short at Options.MaxSession or
// when ctx ends.
//
// Concurrency: Run may be called from several goroutines at once with
// different documents; each call owns its actors, listener and trace. Inside
// a run, a Trace and a Store are safe for concurrent use; an actor's phase
// machine is guarded by its own mutex, taken for each observed event.
package attack
