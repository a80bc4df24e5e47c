package telemetry

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// The seed's (AITF) attribute keys.
const (
	AttrServerName         = "aitf.mcp.server.name"
	AttrServerTransport    = "aitf.mcp.server.transport"
	AttrServerVersion      = "aitf.mcp.server.version"
	AttrServerURL          = "aitf.mcp.server.url"
	AttrProtocolVersion    = "aitf.mcp.protocol.version"
	AttrConnectionID       = "aitf.mcp.connection.id"
	AttrToolCount          = "aitf.mcp.tool.count"
	AttrToolNames          = "aitf.mcp.tool.names"
	AttrToolName           = "aitf.mcp.tool.name"
	AttrToolServer         = "aitf.mcp.tool.server"
	AttrToolInput          = "aitf.mcp.tool.input"
	AttrToolOutput         = "aitf.mcp.tool.output"
	AttrToolResponseError  = "aitf.mcp.tool.response_error"
	AttrToolIsError        = "aitf.mcp.tool.is_error"
	AttrToolDurationMS     = "aitf.mcp.tool.duration_ms"
	AttrToolApprovalNeeded = "aitf.mcp.tool.approval_required"
	AttrToolApproved       = "aitf.mcp.tool.approved"
	AttrResourceURI        = "aitf.mcp.resource.uri"
	AttrResourceName       = "aitf.mcp.resource.name"
	AttrResourceMIMEType   = "aitf.mcp.resource.mime_type"
	AttrResourceSize       = "aitf.mcp.resource.size_bytes"
	AttrPromptName         = "aitf.mcp.prompt.name"
	AttrPromptArguments    = "aitf.mcp.prompt.arguments"
	AttrPromptDescription  = "aitf.mcp.prompt.description"
	AttrSamplingModel      = "aitf.mcp.sampling.model"
	AttrSamplingMaxTokens  = "aitf.mcp.sampling.max_tokens"
	AttrSamplingContext    = "aitf.mcp.sampling.include_context"

	// Shared with the OpenTelemetry GenAI conventions.
	AttrUsageInputTokens  = "gen_ai.usage.input_tokens"
	AttrUsageOutputTokens = "gen_ai.usage.output_tokens"
)

// The seed's events and their attributes.
const (
	EventCapabilities = "mcp.server.capabilities"
	EventToolInput    = "mcp.tool.input"
	EventToolOutput   = "mcp.tool.output"
	EventToolApproval = "mcp.tool.approval"

	AttrInputContent     = "mcp.tool.input.content"
	AttrOutputContent    = "mcp.tool.output.content"
	AttrOutputType       = "mcp.tool.output.type"
	AttrApprovalStatus   = "mcp.tool.approval.status"
	AttrApprovalApprover = "mcp.tool.approval.approver"
)

// warden's own attributes, on every span.
const (
	AttrDecision   = "warden.decision" // allow | deny | error
	AttrStage      = "warden.stage"
	AttrRule       = "warden.rule"
	AttrInvariant  = "warden.invariant"
	AttrParamsHash = "warden.params_hash"
	AttrJTI        = "warden.jti"
	AttrAuditSeq   = "warden.audit.seq"
	AttrUpstream   = "warden.upstream"
)

// spanBuilder collects a span's attributes and events, and the seed fields
// it set (for OCSF compliance enrichment).
type spanBuilder struct {
	attrs  []attribute.KeyValue
	events []event
	seed   []string

	capture Capture
	// memo is what capture made of each content string so far: an
	// operation's arguments and output go into several attributes, events
	// and OCSF fields, and redaction is worth doing once.
	memo []captured
	// output caches toolOutput(op.Result) once read (outRead).
	output, outType string
	outRead         bool
}

// toolOutput is toolOutput(op.Result), read once per operation.
func (b *spanBuilder) toolOutput(op *Operation) (text, typ string) {
	if !b.outRead {
		b.output, b.outType = toolOutput(op.Result)
		b.outRead = true
	}
	return b.output, b.outType
}

type captured struct {
	in, out string
	ok      bool
}

// captured returns what b's Capture records for s (see Capture.capture),
// redacting each distinct s once per operation.
func (b *spanBuilder) captured(s string) (string, bool) {
	for _, m := range b.memo {
		if m.in == s {
			return m.out, m.ok
		}
	}
	out, ok := b.capture.capture(s)
	b.memo = append(b.memo, captured{s, out, ok})
	return out, ok
}

type event struct {
	name  string
	attrs []attribute.KeyValue
	at    time.Time // zero: the operation's start (its end for output and capabilities)
}

func (b *spanBuilder) seedAttr(kv attribute.KeyValue) {
	b.attrs = append(b.attrs, kv)
	b.seed = append(b.seed, string(kv.Key))
}

// seedAttrIf sets kv, a seed field, and counts it among the fields the span
// carried (for its compliance tags) only when applies.
func (b *spanBuilder) seedAttrIf(applies bool, kv attribute.KeyValue) {
	if applies {
		b.seedAttr(kv)
		return
	}
	b.attrs = append(b.attrs, kv)
}

func (b *spanBuilder) seedString(key, v string) {
	if v != "" {
		b.seedAttr(attribute.String(key, v))
	}
}

func (b *spanBuilder) event(name string, kvs ...attribute.KeyValue) {
	b.eventAt(time.Time{}, name, kvs...)
}

func (b *spanBuilder) eventAt(at time.Time, name string, kvs ...attribute.KeyValue) {
	for _, kv := range kvs {
		b.seed = append(b.seed, string(kv.Key))
	}
	b.events = append(b.events, event{name: name, attrs: kvs, at: at})
}

// spanName returns the span's name: the seed's format when the AITF
// convention is on, else the OpenTelemetry MCP format "{method} {target}".
func (r *Recorder) spanName(t SpanType, op *Operation) string {
	if r.aitf && t != SpanOther {
		target := op.Upstream
		switch t {
		case SpanToolInvoke:
			target = op.Tool
		case SpanResourceRead, SpanResourceSubscribe:
			target = lookupString(op.Params, "uri")
		case SpanPromptGet:
			target = lookupString(op.Params, "name")
		}
		return strings.TrimPrefix(t.Seed(), "aitf.") + " " + target
	}
	switch t {
	case SpanToolInvoke:
		return op.Method + " " + op.Tool
	case SpanPromptGet:
		return op.Method + " " + lookupString(op.Params, "name")
	case SpanServerDisconnect:
		return "mcp.server.disconnect"
	}
	return op.Method
}

// spanKind follows the seed (CLIENT, sampling SERVER) when the AITF
// convention is on; with OpenTelemetry names only, the gateway is the server
// of the client's requests and the client of the upstream's, and warden as
// a client (Operation.AsClient) the reverse.
func (r *Recorder) spanKind(t SpanType, op *Operation) trace.SpanKind {
	if r.aitf && t != SpanOther {
		if t == SpanSamplingRequest {
			return trace.SpanKindServer
		}
		return trace.SpanKindClient
	}
	if op.FromUpstream != op.AsClient {
		return trace.SpanKindClient
	}
	return trace.SpanKindServer
}

// aitfAttributes adds the seed's attributes and events for span type t.
func (r *Recorder) aitfAttributes(b *spanBuilder, t SpanType, op *Operation) {
	switch t {
	case SpanServerConnect:
		b.seedString(AttrServerName, op.Upstream)
		b.seedString(AttrServerTransport, op.serverTransport())
		b.seedString(AttrConnectionID, op.connectionID())
		b.seedString(AttrServerVersion, firstOf(lookupString(op.Result, "serverInfo", "version"), op.UpstreamVersion))
		b.seedString(AttrServerURL, op.UpstreamURL)
		b.seedString(AttrProtocolVersion, firstOf(lookupString(op.Result, "protocolVersion"), op.ProtocolVersion))
		if op.Result != nil {
			b.event(EventCapabilities, capabilities(op)...)
		}
	case SpanServerDisconnect:
		b.seedString(AttrServerName, op.Upstream)
		b.seedString(AttrConnectionID, op.connectionID())
	case SpanToolDiscover:
		b.seedString(AttrServerName, op.Upstream)
		if names, ok := toolNames(op.Result); ok {
			b.seedAttr(attribute.Int(AttrToolCount, len(names)))
			b.seedAttr(attribute.StringSlice(AttrToolNames, names))
		}
		b.seedString(AttrConnectionID, op.connectionID())
	case SpanToolInvoke:
		r.toolInvoke(b, op)
	case SpanResourceRead:
		b.seedString(AttrResourceURI, lookupString(op.Params, "uri"))
		b.seedString(AttrServerName, op.Upstream)
		b.seedString(AttrConnectionID, op.connectionID())
		b.seedString(AttrResourceName, op.ResourceName)
		if op.Result != nil {
			mime, size := resourceContents(op.Result)
			b.seedString(AttrResourceMIMEType, mime)
			b.seedAttr(attribute.Int64(AttrResourceSize, size))
		}
	case SpanResourceSubscribe:
		b.seedString(AttrResourceURI, lookupString(op.Params, "uri"))
		b.seedString(AttrServerName, op.Upstream)
		b.seedString(AttrConnectionID, op.connectionID())
	case SpanPromptGet:
		b.seedString(AttrPromptName, lookupString(op.Params, "name"))
		b.seedString(AttrServerName, op.Upstream)
		if args, ok := lookup(op.Params, "arguments"); ok {
			if s, ok := b.captured(string(args)); ok {
				b.seedString(AttrPromptArguments, s)
			}
		}
		b.seedString(AttrPromptDescription, lookupString(op.Result, "description"))
	case SpanSamplingRequest:
		b.seedString(AttrServerName, op.Upstream)
		model := firstOf(firstHint(op.Params), lookupString(op.Result, "model"))
		b.seedString(AttrSamplingModel, firstOf(model, "unspecified"))
		if n, ok := lookupInt(op.Params, "maxTokens"); ok {
			b.seedAttr(attribute.Int64(AttrSamplingMaxTokens, n))
		}
		b.seedString(AttrSamplingContext, lookupString(op.Params, "includeContext"))
	}
}

// toolInvoke adds the attributes and events of mcp.tool.invoke.
func (r *Recorder) toolInvoke(b *spanBuilder, op *Operation) {
	b.seedString(AttrToolName, op.Tool)
	b.seedString(AttrToolServer, op.Upstream)
	b.seedString(AttrConnectionID, op.connectionID())
	input, hasInput := b.captured(string(op.Arguments))
	if hasInput {
		b.seedString(AttrToolInput, input)
	}
	output, outType := b.toolOutput(op)
	output, hasOutput := b.captured(output)
	if hasOutput {
		b.seedString(AttrToolOutput, output)
	}
	respErr := ""
	switch {
	case op.Denial != nil:
		respErr = "denied by " + op.Denial.Stage + ": " + op.Denial.Reason
	case op.Error != nil:
		respErr = op.Error.Message
	case op.toolError():
		respErr, _ = b.toolOutput(op)
	}
	if respErr != "" {
		respErr, _ = b.captured(respErr)
		if b.capture.Mode == CaptureOff {
			respErr = "error"
		}
	}
	// A field that says "no" (no error, no approval) is set, but brings no
	// compliance tag: the controls apply where there is something to show.
	b.seedAttrIf(respErr != "", attribute.String(AttrToolResponseError, respErr))
	b.seedAttrIf(op.failed(), attribute.Bool(AttrToolIsError, op.failed()))
	if !op.Start.IsZero() && !op.End.IsZero() {
		b.seedAttr(attribute.Float64(AttrToolDurationMS, float64(op.End.Sub(op.Start).Microseconds())/1000))
	}
	b.seedString(AttrServerTransport, op.serverTransport())
	b.seedAttrIf(op.Approval != "", attribute.Bool(AttrToolApprovalNeeded, op.Approval != ""))
	if op.Approval != "" {
		b.seedAttr(attribute.Bool(AttrToolApproved, op.Approval == "approved"))
		approvalEvents(b, op)
	}
	if hasInput {
		b.event(EventToolInput, attribute.String(AttrInputContent, input))
	}
	if hasOutput {
		kvs := []attribute.KeyValue{attribute.String(AttrOutputContent, output)}
		if outType != "" {
			kvs = append(kvs, attribute.String(AttrOutputType, outType))
		}
		b.event(EventToolOutput, kvs...)
	}
}

// approvalEvents adds the mcp.tool.approval events of a held call: status
// requested when it was held and, once decided, the decision with its
// approver.
func approvalEvents(b *spanBuilder, op *Operation) {
	held, decided := op.Held, op.Decided
	if held.IsZero() {
		held = op.Start
	}
	if decided.IsZero() {
		decided = op.End
	}
	b.eventAt(held, EventToolApproval, attribute.String(AttrApprovalStatus, "requested"))
	if op.Approval == "requested" {
		return
	}
	kvs := []attribute.KeyValue{attribute.String(AttrApprovalStatus, op.Approval)}
	if op.Approver != "" {
		kvs = append(kvs, attribute.String(AttrApprovalApprover, op.Approver))
	}
	b.eventAt(decided, EventToolApproval, kvs...)
}

// usageAttributes adds gen_ai.usage.* on sampling spans (both conventions).
func usageAttributes(b *spanBuilder, op *Operation) {
	u := op.Usage
	if u == nil {
		in, ok1 := firstInt(op.Result, [][]string{{"usage", "inputTokens"}, {"_meta", "usage", "inputTokens"}, {"usage", "input_tokens"}})
		out, ok2 := firstInt(op.Result, [][]string{{"usage", "outputTokens"}, {"_meta", "usage", "outputTokens"}, {"usage", "output_tokens"}})
		if !ok1 && !ok2 {
			return
		}
		u = &Usage{InputTokens: in, OutputTokens: out}
	}
	b.seedAttr(attribute.Int64(AttrUsageInputTokens, u.InputTokens))
	b.seedAttr(attribute.Int64(AttrUsageOutputTokens, u.OutputTokens))
}

// otelAttributes adds the OpenTelemetry MCP semantic convention attributes.
func (r *Recorder) otelAttributes(b *spanBuilder, t SpanType, op *Operation) {
	a := &b.attrs
	add := func(kv attribute.KeyValue) { *a = append(*a, kv) }
	if op.Method != "" {
		add(semconv.McpMethodNameKey.String(op.Method))
	}
	if op.RequestID != "" && !op.Notification {
		add(semconv.JSONRPCRequestIDKey.String(requestIDText(op.RequestID)))
	}
	if op.Session != "" {
		add(semconv.McpSessionIDKey.String(op.Session))
	}
	if v := firstOf(lookupString(op.Result, "protocolVersion"), op.ProtocolVersion); v != "" {
		add(semconv.McpProtocolVersionKey.String(v))
	}
	switch op.Transport {
	case TransportStdio:
		add(semconv.NetworkTransportPipe)
	case TransportStreamableHTTP, TransportSSE:
		add(semconv.NetworkTransportTCP)
		add(semconv.NetworkProtocolNameKey.String("http"))
	}
	switch op.Method {
	case "tools/call":
		add(semconv.GenAIToolNameKey.String(op.Tool))
		add(semconv.GenAIOperationNameExecuteTool)
		if s, ok := b.captured(string(op.Arguments)); ok {
			add(semconv.GenAIToolCallArgumentsKey.String(s))
		}
		if out, _ := b.toolOutput(op); out != "" {
			if s, ok := b.captured(string(op.Result)); ok {
				add(semconv.GenAIToolCallResultKey.String(s))
			}
		}
	case "prompts/get":
		add(semconv.GenAIPromptNameKey.String(lookupString(op.Params, "name")))
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated":
		add(semconv.McpResourceURIKey.String(lookupString(op.Params, "uri")))
	}
	if et := errorType(op); et != "" {
		add(semconv.ErrorTypeKey.String(et))
	}
	switch {
	case op.Error != nil:
		add(semconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(op.Error.Code, 10)))
	case op.Denial != nil: // warden's own refusal: the code it answered with
		add(semconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(op.Denial.code(), 10)))
	}
}

// errorType is OTel's error.type: the JSON-RPC code, or tool_error.
func errorType(op *Operation) string {
	switch {
	case op.Error != nil:
		return strconv.FormatInt(op.Error.Code, 10)
	case op.Denial != nil:
		return strconv.FormatInt(op.Denial.code(), 10)
	case op.toolError():
		return "tool_error"
	}
	return ""
}

// wardenAttributes adds warden's decision attributes.
func wardenAttributes(b *spanBuilder, op *Operation) {
	decision := "allow"
	if op.Denial != nil {
		decision = "deny"
	} else if op.failed() {
		decision = "error"
	}
	add := func(k, v string) {
		if v != "" {
			b.attrs = append(b.attrs, attribute.String(k, v))
		}
	}
	add(AttrDecision, decision)
	add(AttrUpstream, op.Upstream)
	if d := op.Denial; d != nil {
		add(AttrStage, d.Stage)
		add(AttrRule, d.Rule)
		add(AttrInvariant, d.Invariant)
	}
	add(AttrParamsHash, op.ParamsHash)
	add(AttrJTI, op.JTI)
	if op.AuditSeq != 0 {
		b.attrs = append(b.attrs, attribute.Int64(AttrAuditSeq, int64(op.AuditSeq)))
	}
}

// requestIDText renders a raw JSON-RPC id as OTel wants it: a string id
// without its quotes, a number as written.
func requestIDText(raw string) string {
	if s, ok := jsonrpc.String([]byte(raw)); ok {
		return s
	}
	return raw
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
