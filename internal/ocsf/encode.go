package ocsf

// A hand-written JSON encoder for the events of this package. Events are
// encoded once per operation on the exporter's goroutine; encoding/json
// spent most of that time in reflection, and more on the unmapped map
// (sorting its keys through reflect.Value), and building that map was
// as much again. AppendJSON writes the bytes
// encoding/json writes with HTML escaping off (json.Encoder.SetEscapeHTML
// (false)), member for member, in struct order, omitempty as the struct tags
// say, map keys sorted, json.RawMessage compacted;
// TestAppendJSONIsEncodingJSON holds it to that for every event kind.
// The unmapped object is typed (Unmapped) and written member by member in
// name order; values in its Extra map of a type the encoder does not know
// go through encoding/json, so no value is ever encoded differently.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/agentwarden/warden/internal/jsonenc"
)

// AppendJSON appends the JSON encoding of ev to dst, as encoding/json
// would encode it with HTML escaping off, without a trailing newline. An
// Event of a type not defined in this package is encoded by encoding/json.
func AppendJSON(dst []byte, ev Event) ([]byte, error) {
	e := encoder{b: dst}
	switch v := ev.(type) {
	case *APIActivity:
		e.apiActivity(v)
	case *DetectionFinding:
		e.detectionFinding(v)
	case *ToolExecution:
		e.toolExecution(v)
	default:
		e.fallback(ev)
	}
	return e.b, e.err
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (a *APIActivity) MarshalJSON() ([]byte, error) { return AppendJSON(nil, a) }

// MarshalJSON implements json.Marshaler with AppendJSON.
func (f *DetectionFinding) MarshalJSON() ([]byte, error) { return AppendJSON(nil, f) }

// MarshalJSON implements json.Marshaler with AppendJSON.
func (t *ToolExecution) MarshalJSON() ([]byte, error) { return AppendJSON(nil, t) }

// encoder appends to b. first is true while the object being written has
// no member yet; err is the first error (a raw value that is not JSON, a
// number JSON cannot hold).
type encoder struct {
	b     []byte
	first bool
	err   error
}

func (e *encoder) open() { e.b = append(e.b, '{'); e.first = true }

func (e *encoder) close() { e.b = append(e.b, '}'); e.first = false }

// key starts member k, a name that needs no escaping.
func (e *encoder) key(k string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *encoder) str(k, v string) {
	if v != "" {
		e.strAlways(k, v)
	}
}

func (e *encoder) strAlways(k, v string) {
	e.key(k)
	e.b = appendString(e.b, v)
}

func (e *encoder) int(k string, v int64) {
	if v != 0 {
		e.intAlways(k, v)
	}
}

func (e *encoder) intAlways(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *encoder) uint(k string, v uint64) {
	if v != 0 {
		e.key(k)
		e.b = strconv.AppendUint(e.b, v, 10)
	}
}

func (e *encoder) boolAlways(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *encoder) raw(k string, v json.RawMessage) {
	if len(v) != 0 {
		e.key(k)
		e.rawValue(v)
	}
}

// rawValue appends v compacted, as encoding/json does with a RawMessage
// (null for nil).
func (e *encoder) rawValue(v json.RawMessage) {
	if v == nil {
		e.b = append(e.b, "null"...)
		return
	}
	buf := compactBuffers.Get().(*bytes.Buffer)
	defer compactBuffers.Put(buf)
	buf.Reset()
	if err := json.Compact(buf, v); err != nil {
		e.fail(err)
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, buf.Bytes()...)
	if buf.Cap() > 64<<10 {
		*buf = bytes.Buffer{} // keep no huge buffer
	}
}

// compactBuffers are json.Compact's buffers (rawValue): a bytes.Buffer
// made per raw value was an allocation each.
var compactBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (e *encoder) strings(k string, v []string) {
	if len(v) == 0 {
		return
	}
	e.key(k)
	e.stringsValue(v)
}

func (e *encoder) stringsValue(v []string) {
	if v == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, s := range v {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, s)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// fallback appends v as encoding/json encodes it, HTML escaping off.
func (e *encoder) fallback(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		e.fail(err)
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func (e *encoder) base(b *Base) {
	e.intAlways("activity_id", int64(b.ActivityID))
	e.str("activity_name", b.ActivityName)
	e.intAlways("category_uid", int64(b.CategoryUID))
	e.str("category_name", b.CategoryName)
	e.intAlways("class_uid", int64(b.Class))
	e.str("class_name", b.ClassName)
	e.intAlways("type_uid", int64(b.TypeUID))
	e.intAlways("time", b.Time)
	e.intAlways("severity_id", int64(b.SeverityID))
	e.str("severity", b.Severity)
	e.int("status_id", int64(b.StatusID))
	e.str("status", b.Status)
	e.str("status_code", b.StatusCode)
	e.str("status_detail", b.StatusDetail)
	e.str("message", b.Message)
	e.key("metadata")
	e.metadata(&b.Metadata)
	if t := b.Trace; t != nil {
		e.key("trace")
		e.open()
		e.strAlways("uid", t.UID)
		if s := t.Span; s != nil {
			e.key("span")
			e.open()
			e.strAlways("uid", s.UID)
			e.int("start_time", s.StartTime)
			e.int("end_time", s.EndTime)
			e.str("operation", s.Operation)
			e.close()
		}
		e.close()
	}
	if len(b.AttestationList) > 0 {
		e.key("attestation_list")
		e.b = append(e.b, '[')
		for i := range b.AttestationList {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.attestation(&b.AttestationList[i])
		}
		e.b = append(e.b, ']')
	}
	if !b.Unmapped.empty() {
		e.key("unmapped")
		e.unmappedObject(b.Unmapped)
	}
}

func (e *encoder) metadata(m *Metadata) {
	e.open()
	e.strAlways("version", m.Version)
	e.key("product")
	e.open()
	e.strAlways("name", m.Product.Name)
	e.strAlways("vendor_name", m.Product.VendorName)
	e.str("version", m.Product.Version)
	e.close()
	e.strings("profiles", m.Profiles)
	if len(m.Extensions) > 0 {
		e.key("extensions")
		e.b = append(e.b, '[')
		for i, x := range m.Extensions {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.open()
			e.strAlways("name", x.Name)
			e.strAlways("uid", x.UID)
			e.strAlways("version", x.Version)
			e.close()
		}
		e.b = append(e.b, ']')
	}
	e.str("uid", m.UID)
	e.uint("sequence", m.Sequence)
	e.str("correlation_uid", m.CorrelationUID)
	e.str("log_name", m.LogName)
	e.close()
}

func (e *encoder) attestation(a *Attestation) {
	e.open()
	e.str("uid", a.UID)
	e.str("chain_uid", a.ChainUID)
	e.str("authority_uid", a.AuthorityUID)
	if a.Fingerprint != nil {
		e.key("fingerprint")
		e.fingerprint(a.Fingerprint)
	}
	if p := a.PrevEvent; p != nil {
		e.key("prev_event")
		e.open()
		e.strAlways("uid", p.UID)
		e.int("type_uid", int64(p.TypeUID))
		if p.Fingerprint != nil {
			e.key("fingerprint")
			e.fingerprint(p.Fingerprint)
		}
		e.close()
	}
	e.close()
}

func (e *encoder) fingerprint(f *Fingerprint) {
	e.open()
	e.intAlways("algorithm_id", int64(f.AlgorithmID))
	e.str("algorithm", f.Algorithm)
	e.int("encoding_id", int64(f.EncodingID))
	e.str("encoding", f.Encoding)
	e.int("serialization_id", int64(f.SerializationID))
	e.str("serialization", f.Serialization)
	e.strAlways("value", f.Value)
	e.close()
}

// value appends one value of Unmapped.Extra.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case string:
		e.b = appendString(e.b, v)
	case uint64:
		e.b = strconv.AppendUint(e.b, v, 10)
	case int:
		e.b = strconv.AppendInt(e.b, int64(v), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, v, 10)
	case bool:
		e.b = strconv.AppendBool(e.b, v)
	case json.RawMessage:
		e.rawValue(v)
	case []string:
		e.stringsValue(v)
	case map[Framework][]string:
		e.tags(v)
	default:
		e.fallback(v)
	}
}

// tags appends compliance tags, frameworks sorted.
func (e *encoder) tags(m map[Framework][]string) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	var keys [8]Framework
	ks := keys[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	e.open()
	for _, k := range ks {
		if !e.first {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, string(k))
		e.b = append(e.b, ':')
		e.stringsValue(m[k])
		e.first = false
	}
	e.close()
}

func (e *encoder) service(k string, s *Service) {
	if s == nil {
		return
	}
	e.key(k)
	e.open()
	e.strAlways("name", s.Name)
	e.str("version", s.Version)
	e.close()
}

func (e *encoder) api(a *API) {
	e.open()
	e.strAlways("operation", a.Operation)
	e.service("service", a.Service)
	if r := a.Request; r != nil {
		e.key("request")
		e.open()
		e.str("uid", r.UID)
		e.raw("data", r.Data)
		e.close()
	}
	if r := a.Response; r != nil {
		e.key("response")
		e.open()
		e.int("code", r.Code)
		e.str("error", r.Error)
		e.str("error_message", r.ErrorMessage)
		e.raw("data", r.Data)
		e.close()
	}
	e.close()
}

func (e *encoder) endpoint(p *Endpoint) {
	e.open()
	e.str("name", p.Name)
	e.str("svc_name", p.SvcName)
	e.str("ip", p.IP)
	e.int("port", int64(p.Port))
	e.close()
}

func (e *encoder) apiActivity(a *APIActivity) {
	e.open()
	e.base(&a.Base)
	e.key("actor")
	e.open()
	e.str("app_name", a.Actor.AppName)
	if u := a.Actor.User; u != nil {
		e.key("user")
		e.open()
		e.str("name", u.Name)
		e.str("uid", u.UID)
		e.close()
	}
	if s := a.Actor.Session; s != nil {
		e.key("session")
		e.open()
		e.strAlways("uid", s.UID)
		e.close()
	}
	e.close()
	e.key("api")
	e.api(&a.API)
	e.key("src_endpoint")
	e.endpoint(&a.SrcEndpoint)
	if a.DstEndpoint != nil {
		e.key("dst_endpoint")
		e.endpoint(a.DstEndpoint)
	}
	if m := a.MessageContext; m != nil {
		e.key("message_context")
		e.open()
		e.intAlways("ai_role_id", int64(m.AIRoleID))
		e.service("service", m.Service)
		e.str("name", m.Name)
		e.str("uid", m.UID)
		e.close()
	}
	if m := a.AIModel; m != nil {
		e.key("ai_model")
		e.open()
		e.strAlways("ai_provider", m.AIProvider)
		e.strAlways("name", m.Name)
		e.close()
	}
	e.close()
}

func (e *encoder) attacks(k string, as []Attack) {
	if len(as) == 0 {
		return
	}
	e.key(k)
	e.b = append(e.b, '[')
	for i, a := range as {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.open()
		if t := a.Technique; t != nil {
			e.key("technique")
			e.open()
			e.strAlways("uid", t.UID)
			e.str("name", t.Name)
			e.close()
		}
		e.str("version", a.Version)
		e.close()
	}
	e.b = append(e.b, ']')
}

func (e *encoder) detectionFinding(f *DetectionFinding) {
	e.open()
	e.base(&f.Base)
	fi := &f.FindingInfo
	e.key("finding_info")
	e.open()
	e.strAlways("uid", fi.UID)
	e.strAlways("title", fi.Title)
	e.str("desc", fi.Desc)
	e.strings("types", fi.Types)
	if a := fi.Analytic; a != nil {
		e.key("analytic")
		e.open()
		e.strAlways("name", a.Name)
		e.str("uid", a.UID)
		e.intAlways("type_id", int64(a.TypeID))
		e.str("type", a.Type)
		e.close()
	}
	e.attacks("attacks", fi.Attacks)
	e.close()
	e.int("action_id", int64(f.ActionID))
	e.str("action", f.Action)
	e.int("disposition_id", int64(f.DispositionID))
	e.str("disposition", f.Disposition)
	e.int("confidence_id", int64(f.ConfidenceID))
	e.boolAlways("is_alert", f.IsAlert)
	e.int("risk_level_id", int64(f.RiskLevelID))
	e.int("risk_score", int64(f.RiskScore))
	e.attacks("attacks", f.Attacks)
	if p := f.Policy; p != nil {
		e.key("policy")
		e.open()
		e.strAlways("name", p.Name)
		e.str("uid", p.UID)
		e.str("desc", p.Desc)
		e.close()
	}
	if len(f.Evidences) > 0 {
		e.key("evidences")
		e.b = append(e.b, '[')
		for i, ev := range f.Evidences {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.open()
			if ev.API != nil {
				e.key("api")
				e.api(ev.API)
			}
			e.close()
		}
		e.b = append(e.b, ']')
	}
	e.close()
}

func (e *encoder) toolExecution(t *ToolExecution) {
	e.open()
	e.base(&t.Base)
	e.str("mcp_server", t.MCPServer)
	e.str("mcp_transport", t.MCPTransport)
	e.str("connection_id", t.ConnectionID)
	e.strAlways("method", t.Method)
	e.str("tool_name", t.ToolName)
	e.raw("tool_input", t.ToolInput)
	e.raw("tool_output", t.ToolOutput)
	e.boolAlways("is_error", t.IsError)
	e.str("response_error", t.ResponseError)
	e.key("duration_ms")
	e.float(t.DurationMS)
	e.boolAlways("approval_required", t.ApprovalRequired)
	if t.Approved != nil {
		e.boolAlways("approved", *t.Approved)
	}
	e.str("approver", t.Approver)
	e.str("resource_uri", t.ResourceURI)
	e.str("prompt_name", t.PromptName)
	if len(t.ComplianceTags) > 0 {
		e.key("compliance_tags")
		e.tags(t.ComplianceTags)
	}
	e.close()
}

var errFloat = errors.New("ocsf: a number JSON cannot hold (NaN or infinite)")

// float appends f as encoding/json formats a float64: the shortest
// representation, in exponent form only below 1e-6 or from 1e21.
func (e *encoder) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.fail(errFloat)
		e.b = append(e.b, '0')
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(e.b); n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s, false) }
