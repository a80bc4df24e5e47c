// Package aguigw is warden's gateway for AG-UI (Agent-User Interaction)
// traffic: an http.Handler in front of one upstream AG-UI agent. The client
// POSTs a RunAgentInput; the agent answers with a text/event-stream of
// events, which the gateway relays event by event, inspected.
//
//	client ──POST RunAgentInput──► Authenticate (principal)
//	                               jsonrpc.Validate (duplicate keys, UTF-8, depth, size)
//	                               shape (threadId, runId, messages[])
//	                               security: role "tool"/"activity" messages and state
//	                                 are untrusted ─► secproc ─► flag | quarantine | deny
//	                               Record(client event)      error ⇒ refused (fail-secure)
//	                               POST (quarantined) input ──► upstream agent
//	       ◄── SSE, event by event ◄───────────────────────────────┘
//	           parse: strict JSON, object with a "type"; both vocabularies
//	                  (0.x THINKING_* → REASONING_*; case folded) → canonical type
//	           lifecycle: content only between its START and END, nothing after
//	                  the run's end but a new RUN_STARTED; tool-call arguments a JSON object
//	           prompt-integrity: no system/developer message from the agent side
//	           security: text deltas held per message until *_END, tool-call
//	                  arguments until TOOL_CALL_END, chunk streams until they close
//	                  (chunks.go), every other member and event per event
//	           Record(event)  ─► write the original bytes (or the quarantined event)
//	           first denial ⇒ Record, then a RUN_ERROR written by the gateway; the run ends
//
// Unchanged events are forwarded byte for byte. A quarantined event keeps
// its members and their order; only the offending string values are
// replaced by a marker ("[warden: quarantined N chars of untrusted
// content: RULE]"). docs/agui.md describes the actions, the latency of
// holding text deltas, and the configuration.
//
// Every refusal names its stage (listener, auth, wire, input, security,
// prompt-integrity, audit, upstream) and its rule: in the JSON error of a
// refused POST, in the code of the RUN_ERROR that ends a stream, and in the
// Event given to Options.Record.
//
// Concurrency: a Handler is immutable after New and safe for concurrent
// use; each POST is served on its own goroutine with its own run state,
// which nothing else touches. Options.Record is called concurrently, from
// the goroutine serving each request, on a context the client cannot
// cancel.
package aguigw
