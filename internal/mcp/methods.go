package mcp

// methods are the JSON-RPC methods of every revision warden relays
// (Revisions), requests and notifications, in either direction.
var methods = map[string]bool{
	// 2025-03-26 on.
	"initialize": true, "ping": true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true,
	"sampling/createMessage": true, "roots/list": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/message": true,
	"notifications/resources/updated": true, "notifications/resources/list_changed": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true,
	"notifications/roots/list_changed": true,
	// 2025-06-18 on.
	"elicitation/create": true,
	// 2025-11-25 on.
	"tasks/get": true, "tasks/list": true, "tasks/result": true, "tasks/cancel": true,
	"notifications/tasks/status": true, "notifications/elicitation/complete": true,
	// 2026-07-28.
	"server/discover": true, "subscriptions/listen": true,
}

// KnownMethod reports whether name is a method of some MCP revision warden
// relays. Peers may send others (extensions, mistakes); anything that sizes
// itself by method names, such as a metric's label set, must not take
// them as they come.
func KnownMethod(name string) bool { return methods[name] }
