package oatf

import "strings"

// The registry of modes, protocols, events and surfaces OATF 0.1 knows. The
// v0.1 bindings say their lists are not exhaustive, so an unknown name only
// warns (W-002, W-003, V-018, V-029).

var knownModes = []string{"mcp_server", "mcp_client", "a2a_server", "a2a_client", "ag_ui_client"}

var knownProtocols = []string{"mcp", "a2a", "ag_ui"}

// KnownModes returns the execution modes OATF 0.1 defines.
func KnownModes() []string { return append([]string(nil), knownModes...) }

// KnownProtocols returns the protocols OATF 0.1 defines.
func KnownProtocols() []string { return append([]string(nil), knownProtocols...) }

func isKnownMode(m string) bool     { return contains(knownModes, m) }
func isKnownProtocol(p string) bool { return contains(knownProtocols, p) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func words(s string) []string { return strings.Fields(s) }

var (
	mcpServerEvents = words(`initialize tools/list tools/call resources/list resources/read
		resources/subscribe resources/unsubscribe resources/templates/list prompts/list prompts/get
		completion/complete logging/setLevel sampling/createMessage elicitation/create
		tasks/get tasks/result tasks/list tasks/cancel roots/list ping
		notifications/initialized notifications/roots/list_changed notifications/cancelled
		notifications/progress notifications/tasks/status`)
	mcpClientEvents = append(words(`notifications/tools/list_changed notifications/resources/list_changed
		notifications/prompts/list_changed notifications/resources/updated
		notifications/elicitation/complete notifications/message`), mcpServerEvents...)
	a2aServerEvents = words(`agent_card/get message/send message/stream tasks/get tasks/cancel
		tasks/resubscribe tasks/pushNotificationConfig/set tasks/pushNotificationConfig/get
		tasks/pushNotificationConfig/list tasks/pushNotificationConfig/delete
		agent/getAuthenticatedExtendedCard`)
	a2aClientEvents = append(words(`task/status task/artifact`), a2aServerEvents...)
	agUIEvents      = words(`run_agent_input tool_call_result run_started run_finished run_error
		step_started step_finished text_message_start text_message_content text_message_end
		text_message_chunk tool_call_start tool_call_args tool_call_end tool_call_chunk
		state_snapshot state_delta messages_snapshot activity_snapshot activity_delta
		reasoning_start reasoning_message_start reasoning_message_content reasoning_message_end
		reasoning_message_chunk reasoning_end reasoning_encrypted_value thinking_start thinking_end
		thinking_text_message_start thinking_text_message_content thinking_text_message_end
		subagent_started subagent_finished subagent_error raw custom`)
)

// modeEvents lists the trigger events each known mode can observe (V-029).
var modeEvents = map[string][]string{
	"mcp_server":   mcpServerEvents,
	"mcp_client":   mcpClientEvents,
	"a2a_server":   a2aServerEvents,
	"a2a_client":   a2aClientEvents,
	"ag_ui_client": agUIEvents,
}

// protocolSurfaces lists the surfaces of each known protocol (V-018).
var protocolSurfaces = map[string][]string{
	"mcp":   mcpClientEvents,
	"a2a":   a2aClientEvents,
	"ag_ui": agUIEvents,
}

// Indicator tiers, the documented extension (see docs/oatf.md), lowest first.
var tiers = []string{"ingested", "local_action", "boundary_breach"}

func tierRank(t string) int {
	for i, x := range tiers {
		if x == t {
			return i + 1
		}
	}
	return 0
}

// Closed enumerations checked by V-005.
var (
	enumStatus       = words("draft experimental stable deprecated")
	enumLevel        = words("informational low medium high critical")
	enumImpact       = words("behavior_manipulation data_exfiltration data_tampering unauthorized_actions information_disclosure credential_theft service_disruption privilege_escalation")
	enumCategory     = words("capability_poisoning response_fabrication context_manipulation oversight_bypass temporal_manipulation availability_disruption cross_protocol_chain")
	enumRelationship = words("primary related")
	enumLogic        = words("any all")
	enumSource       = words("request response")
	enumExtractType  = words("json_path regex")
	enumMethod       = words("pattern expression semantic")
	enumIntentClass  = words("prompt_injection data_exfiltration privilege_escalation social_engineering instruction_override")
	enumLogLevel     = words("info warn error")
	enumElicitAction = words("accept decline cancel")
	enumElicitMode   = words("form url")
)
