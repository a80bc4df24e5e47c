package deny

import "github.com/agentwarden/warden/internal/jsonrpc"

// The rules warden's stages refuse with. A rule's name is shared by every
// stage that uses it (the audit log's "write" and the upstream's "write");
// Catalog says which stage uses which, with the code a client gets.
const (
	// Rules of the MCP gateway's stages (docs/errors.md).
	RuleToolName             Rule = "tool-name"            // wire: tools/call without a string params.name
	RuleToolNameVariant      Rule = "tool-name-variant"    // tool-policy: a look-alike of a listed tool
	RuleUnpinned             Rule = "unpinned"             // pin
	RuleUnreadable           Rule = "unreadable"           // pin: a tools/list answer that cannot be checked
	RuleRelistFailed         Rule = "relist-failed"        // pin: warden's own re-list failed
	RuleRelisting            Rule = "relisting"            // pin: a call given up while waiting for the re-list (audit only)
	RuleUnclassifiable       Rule = "unclassifiable"       // classify
	RuleIntoHigherTier       Rule = "into-higher-tier"     // taint: answer text into a tool call of a higher tier
	RuleIntoSinkTool         Rule = "into-sink-tool"       // taint: answer text into a gateway.taint.sink_tools tool
	RuleIntoDelegation       Rule = "into-delegation"      // taint: answer text into an A2A message
	RuleTokenMissing         Rule = "token-missing"        // zero-trust
	RuleAmbiguousCredential  Rule = "ambiguous-credential" // zero-trust: header and _meta disagree
	RuleNoPrincipal          Rule = "no-principal"         // zero-trust
	RuleSignature            Rule = "signature"            // zero-trust (token), card (agent card)
	RuleClaims               Rule = "claims"               // zero-trust
	RuleINV1                 Rule = "INV-1"                // zero-trust: binding to subject, upstream, tool, session
	RuleINV2                 Rule = "INV-2"                // zero-trust: time
	RuleINV3                 Rule = "INV-3"                // zero-trust: parameters_hash
	RuleINV4                 Rule = "INV-4"                // zero-trust: single use
	RuleINV5                 Rule = "INV-5"                // zero-trust: DPoP
	RuleINV6                 Rule = "INV-6"                // zero-trust: client signature
	RuleINV7                 Rule = "INV-7"                // delegation (A2A)
	RuleEpoch                Rule = "epoch"                // zero-trust: issued before the replay store's epoch
	RuleStore                Rule = "store"                // zero-trust (replay store), card (pin store)
	RuleStoreTimeout         Rule = "store-timeout"        // zero-trust
	RuleRevoked              Rule = "revoked"              // revocation (P8)
	RuleRevocationStore      Rule = "revocation-store"     // revocation: the registry could not decide
	RuleApprovalDenied       Rule = "approval-denied"      // approval (P5), consent, taint
	RuleApprovalTimeout      Rule = "approval-timeout"     // approval, consent, taint
	RuleApprovalCancelled    Rule = "approval-cancelled"   // approval, consent, taint
	RuleApprovalUnavailable  Rule = "approval-unavailable" // approval: nobody can be asked
	RuleIssue                Rule = "issue"                // approval: warden could not issue the token
	RuleNotInitialized       Rule = "not-initialized"      // session
	RuleShutdown             Rule = "shutdown"             // gateway: draining
	RuleDuplicateID          Rule = "duplicate-id"         // relay
	RuleUnsolicitedResponse  Rule = "unsolicited-response" // relay
	RuleSharedUpstream       Rule = "shared-upstream"      // relay: the shared child asked a stateless client something
	RuleWrite                Rule = "write"                // audit (the record), upstream (the conn)
	RuleDial                 Rule = "dial"                 // upstream
	RuleEnded                Rule = "ended"                // upstream
	RuleTimeout              Rule = "timeout"              // upstream
	RuleSessionExpired       Rule = "session-expired"      // upstream
	RuleContentType          Rule = "content-type"         // authorize, listener (A2A, AG-UI)
	RuleJSON                 Rule = "json"                 // authorize: not {"upstream","tool","arguments"}
	RuleTool                 Rule = "tool"                 // authorize: no tool
	RuleUpstream             Rule = "upstream"             // authorize: no such upstream
	RuleNoZeroTrust          Rule = "no-zero-trust"        // authorize
	RuleBindingMode          Rule = "binding_mode"         // authorize
	RuleSchemaUnknown        Rule = "schema-unknown"       // authorize (stage zero-trust)
	RuleSession              Rule = "session"              // authorize: a bad Mcp-Session-Id
	RuleHTTPMethod           Rule = "http-method"          // listener (A2A, AG-UI)
	RuleBody                 Rule = "body"                 // listener (A2A, AG-UI): the body could not be read
	RuleSyntax               Rule = "syntax"               // wire: not JSON
	RuleNotRequest           Rule = "not-request"          // wire (A2A): not a request
	RuleUnknownMethod        Rule = "unknown-method"       // method-policy (A2A)
	RuleExtendedCard         Rule = "extended-card"        // method-policy (A2A)
	RuleTaskOwner            Rule = "task-owner"           // task-owner (A2A): another client's task or context
	RulePushURL              Rule = "push-url"             // method-policy (A2A): a push webhook into the agent's network
	RuleUnavailable          Rule = "unavailable"          // card (A2A)
	RuleInvalid              Rule = "invalid"              // card, upstream (A2A)
	RuleUnsigned             Rule = "unsigned"             // card (A2A)
	RuleChanged              Rule = "changed"              // card (A2A)
	RuleRewrite              Rule = "rewrite"              // card (A2A)
	RuleUnreachable          Rule = "unreachable"          // upstream (A2A, AG-UI)
	RuleNotResponse          Rule = "not-response"         // upstream (A2A)
	RuleID                   Rule = "id"                   // upstream (A2A): the answer's id is not the request's
	RuleInvalidEvent         Rule = "invalid-event"        // upstream (A2A): a streamed event warden refuses
	RuleUnexpectedStream     Rule = "unexpected-stream"    // upstream (A2A)
	RuleCancelled            Rule = "cancelled"            // upstream (A2A): the client went away
	RuleShape                Rule = "shape"                // wire, input (AG-UI)
	RuleNotObject            Rule = "not-object"           // wire (AG-UI): an event that is not an object
	RuleType                 Rule = "type"                 // wire (AG-UI): an event without a string type
	RuleEventName            Rule = "event-name"           // wire (AG-UI): SSE event name and type disagree
	RuleSystemMessage        Rule = "system-message"       // prompt-integrity (AG-UI)
	RuleSystemMessageChanged Rule = "system-message-changed"
	RuleHoldLimit            Rule = "hold-limit" // security (AG-UI)
	RuleStatus               Rule = "status"     // upstream (AG-UI): an HTTP error status
	RuleNotStream            Rule = "not-stream" // upstream (AG-UI): not an event stream
	RuleSequence             Rule = "sequence"   // wire (AG-UI): an event out of its message's or run's lifecycle
)

// Protocol is the relay a Catalog entry belongs to.
type Protocol string

// The protocols, each with its documentation page.
const (
	MCP  Protocol = "mcp"   // docs/errors.md
	A2A  Protocol = "a2a"   // docs/a2a.md
	AGUI Protocol = "ag-ui" // docs/agui.md
)

// Entry is one rule of one stage of one relay.
type Entry struct {
	Protocol Protocol
	Stage    string
	Rule     Rule
	// Code is the JSON-RPC code the client gets; 0 when the relay says so
	// by other means (an HTTP status, a RUN_ERROR) or does not answer.
	Code int64
}

// Catalog lists every fixed rule, with its stage and code. Its test checks
// each entry against the protocol's documentation page.
var Catalog = []Entry{
	{MCP, "wire", RuleToolName, jsonrpc.CodeInvalidParams},
	{MCP, "tool-policy", RuleToolNameVariant, jsonrpc.CodeDenied},
	{MCP, "pin", RuleUnpinned, jsonrpc.CodeDenied},
	{MCP, "pin", RuleUnreadable, jsonrpc.CodeDenied},
	{MCP, "pin", RuleRelistFailed, jsonrpc.CodeDenied},
	{MCP, "pin", RuleRelisting, 0},
	{MCP, "classify", RuleUnclassifiable, jsonrpc.CodeDenied},
	{MCP, "taint", RuleIntoHigherTier, jsonrpc.CodeDenied},
	{MCP, "taint", RuleIntoSinkTool, jsonrpc.CodeDenied},
	{MCP, "taint", RuleIntoDelegation, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleTokenMissing, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleAmbiguousCredential, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleNoPrincipal, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleSignature, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleClaims, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV1, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV2, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV3, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV4, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV5, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleINV6, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleEpoch, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleStore, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleStoreTimeout, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleRevoked, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleRevocationStore, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleApprovalDenied, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleApprovalTimeout, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleApprovalCancelled, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleApprovalUnavailable, jsonrpc.CodeDenied},
	{MCP, "zero-trust", RuleIssue, jsonrpc.CodeDenied},
	{MCP, "authorize", RuleContentType, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleBody, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleJSON, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleTool, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleUpstream, jsonrpc.CodeInvalidParams},
	{MCP, "authorize", RuleNoZeroTrust, jsonrpc.CodeInvalidParams},
	{MCP, "authorize", RuleBindingMode, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleSchemaUnknown, jsonrpc.CodeInvalidParams},
	{MCP, "authorize", RuleSession, jsonrpc.CodeInvalidRequest},
	{MCP, "authorize", RuleINV5, jsonrpc.CodeDenied},
	{MCP, "authorize", RuleRevocationStore, jsonrpc.CodeDenied},
	{MCP, "audit", RuleWrite, jsonrpc.CodeDenied},
	{MCP, "session", RuleNotInitialized, jsonrpc.CodeInvalidRequest},
	{MCP, "gateway", RuleShutdown, jsonrpc.CodeSessionClosed},
	{MCP, "relay", RuleDuplicateID, jsonrpc.CodeInvalidRequest},
	{MCP, "relay", RuleUnsolicitedResponse, 0},
	{MCP, "relay", RuleSharedUpstream, jsonrpc.CodeMethodNotFound},
	{MCP, "upstream", RuleDial, jsonrpc.CodeUpstreamUnavailable},
	{MCP, "upstream", RuleWrite, jsonrpc.CodeUpstreamUnavailable},
	{MCP, "upstream", RuleEnded, jsonrpc.CodeUpstreamUnavailable},
	{MCP, "upstream", RuleTimeout, jsonrpc.CodeTimeout},
	{MCP, "upstream", RuleSessionExpired, jsonrpc.CodeUpstreamUnavailable},

	{A2A, "listener", RuleHTTPMethod, 0},
	{A2A, "listener", RuleContentType, 0},
	{A2A, "listener", RuleBody, 0},
	{A2A, "wire", RuleSyntax, jsonrpc.CodeParseError},
	{A2A, "wire", RuleNotRequest, jsonrpc.CodeInvalidRequest},
	{A2A, "method-policy", RuleUnknownMethod, jsonrpc.CodeDenied},
	{A2A, "method-policy", RuleExtendedCard, jsonrpc.CodeDenied},
	{A2A, "method-policy", RulePushURL, jsonrpc.CodeDenied},
	{A2A, "task-owner", RuleTaskOwner, jsonrpc.CodeDenied},
	{A2A, "card", RuleUnavailable, jsonrpc.CodeDenied},
	{A2A, "card", RuleInvalid, jsonrpc.CodeDenied},
	{A2A, "card", RuleSignature, jsonrpc.CodeDenied},
	{A2A, "card", RuleUnsigned, jsonrpc.CodeDenied},
	{A2A, "card", RuleChanged, jsonrpc.CodeDenied},
	{A2A, "card", RuleStore, jsonrpc.CodeDenied},
	{A2A, "card", RuleRewrite, jsonrpc.CodeDenied},
	{A2A, "delegation", RuleINV7, jsonrpc.CodeDenied},
	{A2A, "consent", RuleApprovalDenied, jsonrpc.CodeDenied},
	{A2A, "consent", RuleApprovalTimeout, jsonrpc.CodeDenied},
	{A2A, "consent", RuleApprovalCancelled, jsonrpc.CodeDenied},
	{A2A, "taint", RuleIntoDelegation, jsonrpc.CodeDenied},
	{A2A, "taint", RuleApprovalDenied, jsonrpc.CodeDenied},
	{A2A, "taint", RuleApprovalTimeout, jsonrpc.CodeDenied},
	{A2A, "taint", RuleApprovalCancelled, jsonrpc.CodeDenied},
	{A2A, "audit", RuleWrite, jsonrpc.CodeInternalError},
	{A2A, "upstream", RuleUnreachable, jsonrpc.CodeUpstreamUnavailable},
	{A2A, "upstream", RuleEnded, jsonrpc.CodeUpstreamUnavailable},
	{A2A, "upstream", RuleInvalid, jsonrpc.CodeUpstreamInvalid},
	{A2A, "upstream", RuleNotResponse, jsonrpc.CodeUpstreamInvalid},
	{A2A, "upstream", RuleID, jsonrpc.CodeUpstreamInvalid},
	{A2A, "upstream", RuleInvalidEvent, jsonrpc.CodeUpstreamInvalid},
	{A2A, "upstream", RuleUnexpectedStream, jsonrpc.CodeUpstreamInvalid},
	{A2A, "upstream", RuleCancelled, 0},

	{AGUI, "listener", RuleHTTPMethod, 0},
	{AGUI, "listener", RuleContentType, 0},
	{AGUI, "listener", RuleBody, 0},
	{AGUI, "wire", RuleSyntax, 0},
	{AGUI, "wire", RuleShape, 0},
	{AGUI, "wire", RuleNotObject, 0},
	{AGUI, "wire", RuleType, 0},
	{AGUI, "wire", RuleEventName, 0},
	{AGUI, "wire", RuleSequence, 0},
	{AGUI, "input", RuleShape, 0},
	{AGUI, "prompt-integrity", RuleSystemMessage, 0},
	{AGUI, "prompt-integrity", RuleSystemMessageChanged, 0},
	{AGUI, "security", RuleHoldLimit, 0},
	{AGUI, "audit", RuleWrite, 0},
	{AGUI, "upstream", RuleUnreachable, 0},
	{AGUI, "upstream", RuleStatus, 0},
	{AGUI, "upstream", RuleNotStream, 0},
	{AGUI, "upstream", RuleEnded, 0},
	{AGUI, "upstream", RuleCancelled, 0},
}
