// Package mcp holds what warden knows about the Model Context Protocol itself:
// its revisions, its method names, and which wire features each revision has.
// It does not decode messages (that is internal/jsonrpc) and it does not depend
// on any MCP SDK: the gateway must parse MCP the same way whatever the peers use.
package mcp

import "slices"

// Protocol revisions warden relays, oldest first.
const (
	Rev20250326 = "2025-03-26"
	Rev20250618 = "2025-06-18"
	Rev20251125 = "2025-11-25"
	Rev20260728 = "2026-07-28"
)

// Revisions lists every revision warden understands, oldest first.
var Revisions = []string{Rev20250326, Rev20250618, Rev20251125, Rev20260728}

// Known reports whether rev is a revision warden understands.
func Known(rev string) bool { return slices.Contains(Revisions, rev) }

// Stateless reports whether rev is a stateless revision (2026-07-28 and later):
// no initialize handshake, no sessions, and per-request _meta in their place.
// Revision strings are dates, so they order as strings.
func Stateless(rev string) bool { return rev >= Rev20260728 }

// AllowsBatch reports whether rev allows JSON-RPC batches. Only 2025-03-26
// did; 2025-06-18 removed them.
func AllowsBatch(rev string) bool { return rev == Rev20250326 }

// Method names the gateway treats specially. Everything else passes through.
const (
	MethodInitialize          = "initialize"
	MethodPing                = "ping"
	MethodDiscover            = "server/discover"
	MethodToolsList           = "tools/list"
	MethodToolsCall           = "tools/call"
	MethodResourcesRead       = "resources/read"
	MethodResourcesSubscribe  = "resources/subscribe"
	MethodPromptsGet          = "prompts/get"
	MethodSubscriptionsListen = "subscriptions/listen"
	MethodSamplingCreate      = "sampling/createMessage"
	MethodElicitationCreate   = "elicitation/create"
	MethodRootsList           = "roots/list"

	NotificationInitialized      = "notifications/initialized"
	NotificationCancelled        = "notifications/cancelled"
	NotificationProgress         = "notifications/progress"
	NotificationToolsListChanged = "notifications/tools/list_changed"
)

// HTTP header names of the streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
	HeaderLastEventID     = "Last-Event-Id"
)

// MetaProtocolVersion is the per-request _meta key that carries the revision
// on stateless revisions.
const MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
