package telemetry

// CoSAIField is one row of the seed's CoSAI WS2 field mapping: a CoSAI WS2
// MCP_ACTIVITY field, the seed attribute that carries it, and where the
// OpenTelemetry convention carries it (warden emits both names).
type CoSAIField struct {
	CoSAI string // CoSAI WS2 MCP_ACTIVITY field
	AITF  string // the seed's attribute
	OTel  string // OpenTelemetry MCP/GenAI attribute, "" if none
	Notes string
}

// CoSAIMapping is the seed's CoSAI WS2 field mapping table, with the
// OpenTelemetry attribute each field also appears as. docs/telemetry.md
// renders it; TestCoSAIMapping checks it against the seed and against the
// spans warden emits.
var CoSAIMapping = []CoSAIField{
	{"mcp.server.name", AttrServerName, "", "Direct match; OTel has no server name (warden.upstream carries it)"},
	{"mcp.tool.name", AttrToolName, "gen_ai.tool.name", "Direct match"},
	{"mcp.request.args", AttrToolInput, "gen_ai.tool.call.arguments", "JSON-encoded input parameters"},
	{"mcp.response.result", AttrToolOutput, "gen_ai.tool.call.result", "May be redacted"},
	{"mcp.response.error", AttrToolResponseError, "error.type", "New in CoSAI WS2 alignment; OTel carries the code, not the message"},
	{"mcp.transport", AttrServerTransport, "network.transport", "On server/tool spans"},
	{"mcp.connection.id", AttrConnectionID, "mcp.session.id", "New in CoSAI WS2 alignment"},
}
