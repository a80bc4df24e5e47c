package attack

// The A2A wire vocabulary, shared by the a2a_server and a2a_client modes.
//
// OATF's A2A binding (§7.2) is written against A2A 0.3: JSON-RPC methods
// message/send, message/stream, tasks/get…; roles "user" and "agent"; task
// states such as "completed"; parts and results told apart by "kind". A2A
// 1.0 peers (a2a-go v2, @a2a-js/sdk 1.x, aimock) use SendMessage,
// SendStreamingMessage, GetTask…; ROLE_USER; TASK_STATE_COMPLETED; parts
// {text} | {data} | {url} | {raw}; and results wrapped as {task} |
// {message} | {statusUpdate} | {artifactUpdate}.
//
// The runtime speaks either generation on the wire, and records everything
// in OATF's vocabulary, so that one document (its triggers, `when`
// predicates, extractors and indicators) works against peers of both:
//
//	wire, 0.3 or 1.0 ──a2aResultOATF / a2aParamsOATF──▶ trace, triggers, when, indicators
//	document content ──a2aResult10 / a2aParams10─────▶ wire, when the peer speaks 1.0
//
// The conversions touch only the structural places A2A defines (the
// result wrapper, kind, role, task state, the shape of parts); everything
// else passes through unchanged, and a value of an unexpected type is left
// as it is rather than repaired.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/oatf"
)

// Where an A2A agent publishes its card: A2A 1.0 (and 0.3 since 0.3.0), and
// the path of earlier drafts that some peers still serve.
const (
	a2aCardPath       = "/.well-known/agent-card.json"
	a2aLegacyCardPath = "/.well-known/agent.json"
)

// Synthetic OATF events of the A2A binding.
const (
	a2aCardEvent     = "agent_card/get"
	a2aStatusEvent   = "task/status"   // a status-update in a stream (client only)
	a2aArtifactEvent = "task/artifact" // an artifact-update in a stream (client only)
	a2aPushEvent     = "push_notification/send"
)

// a2aMethods10 maps OATF's (A2A 0.3) method names to A2A 1.0's.
var a2aMethods10 = map[string]string{
	"message/send":                        "SendMessage",
	"message/stream":                      "SendStreamingMessage",
	"tasks/get":                           "GetTask",
	"tasks/list":                          "ListTasks",
	"tasks/cancel":                        "CancelTask",
	"tasks/resubscribe":                   "SubscribeToTask",
	"tasks/pushNotificationConfig/set":    "CreateTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/get":    "GetTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/list":   "ListTaskPushNotificationConfigs",
	"tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
	"agent/getAuthenticatedExtendedCard":  "GetExtendedAgentCard",
}

// a2aMethodsOATF is the inverse of a2aMethods10.
var a2aMethodsOATF = func() map[string]string {
	m := make(map[string]string, len(a2aMethods10))
	for k, v := range a2aMethods10 {
		m[v] = k
	}
	return m
}()

// a2aOATFMethod returns the OATF name of a method written in either
// vocabulary, and whether it was written in A2A 1.0's. Unknown methods are
// returned unchanged.
func a2aOATFMethod(method string) (name string, v10 bool) {
	if n, ok := a2aMethodsOATF[method]; ok {
		return n, true
	}
	return method, false
}

// a2aWireMethod returns the method to send for an OATF name.
func a2aWireMethod(name string, v10 bool) string {
	if n, ok := a2aMethods10[name]; ok && v10 {
		return n
	}
	return name
}

// a2aStreaming reports whether an OATF method answers with an SSE stream.
func a2aStreaming(name string) bool { return name == "message/stream" || name == "tasks/resubscribe" }

// The A2A 0.3 task states; a 1.0 TASK_STATE_X maps to the lower-case,
// dash-separated x, and back.
var a2aStates = []string{"submitted", "working", "input-required", "completed", "canceled",
	"failed", "rejected", "auth-required", "unknown"}

func a2aStateOATF(s string) string {
	if rest, ok := strings.CutPrefix(s, "TASK_STATE_"); ok && rest != "" {
		return strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
	}
	return s
}

func a2aState10(s string) string {
	for _, st := range a2aStates {
		if s == st {
			return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
		}
	}
	return s
}

func a2aTerminal(state string) bool {
	switch a2aStateOATF(state) {
	case "completed", "canceled", "failed", "rejected":
		return true
	}
	return false
}

// --- toward OATF's vocabulary (in place, on values the caller owns) ---

func setString(v *oatf.Value, key, s string) { v.Set(key, oatf.NewString(s)) }

// partOATF returns a part in the 0.3 form {kind, …}. A part that already
// has a kind, or whose shape is unknown, is returned as it is.
func partOATF(p *oatf.Value) *oatf.Value {
	if p == nil || p.Kind != oatf.Map || p.Has("kind") {
		return p
	}
	out := oatf.NewMap()
	switch {
	case p.Has("text"):
		setString(out, "kind", "text")
	case p.Has("data"):
		setString(out, "kind", "data")
	case p.Has("url") || p.Has("raw"):
		setString(out, "kind", "file")
		file := oatf.NewMap()
		for _, m := range []struct{ from, to string }{{"url", "uri"}, {"raw", "bytes"}, {"mediaType", "mimeType"}, {"filename", "name"}} {
			if v := p.Get(m.from); v != nil {
				file.Set(m.to, v)
			}
		}
		out.Set("file", file)
		for _, m := range p.Pairs {
			switch m.Key {
			case "url", "raw", "mediaType", "filename":
			default:
				out.Set(m.Key, m.Value)
			}
		}
		return out
	default:
		return p
	}
	for _, m := range p.Pairs {
		out.Set(m.Key, m.Value)
	}
	return out
}

func partsOATF(v *oatf.Value) {
	for i, p := range items(v) {
		v.Items[i] = partOATF(p)
	}
}

// messageOATF puts a message into the 0.3 form: role user|agent, parts
// with kind, kind "message".
func messageOATF(m *oatf.Value) {
	if m == nil || m.Kind != oatf.Map {
		return
	}
	if r, ok := strings.CutPrefix(m.Get("role").StringOr(""), "ROLE_"); ok && r != "" && r != "UNSPECIFIED" {
		setString(m, "role", strings.ToLower(r))
	}
	partsOATF(m.Get("parts"))
	if !m.Has("kind") {
		setString(m, "kind", "message")
	}
}

func statusOATF(st *oatf.Value) {
	if st == nil || st.Kind != oatf.Map {
		return
	}
	if s := st.Get("state"); s != nil && s.Kind == oatf.String {
		setString(st, "state", a2aStateOATF(s.Str))
	}
	messageOATF(st.Get("message"))
}

func artifactOATF(a *oatf.Value) {
	if a != nil && a.Kind == oatf.Map {
		partsOATF(a.Get("parts"))
	}
}

// a2aWrappers are A2A 1.0's result members and the 0.3 kinds they carry.
var a2aWrappers = []struct{ key, kind string }{
	{"task", "task"}, {"message", "message"}, {"statusUpdate", "status-update"}, {"artifactUpdate", "artifact-update"},
}

// a2aKindOf names what an object without "kind" is by its shape: a Task,
// a Message, a status or an artifact update; "" when it is none of them.
func a2aKindOf(v *oatf.Value) string {
	switch {
	case v.Has("taskId") && v.Has("artifact"):
		return "artifact-update"
	case v.Has("taskId") && v.Has("status"):
		return "status-update"
	case v.Has("id") && v.Has("status"):
		return "task"
	case v.Has("role") && v.Has("parts"):
		return "message"
	}
	return ""
}

// a2aResultOATF returns a result (or stream item) of either generation in
// OATF's vocabulary: a 1.0 wrapper is unwrapped (members beside it are
// kept, after the unwrapped object's own), kind is set, roles, states and
// parts are converted. It is idempotent. Other values are returned as they
// are. v is not modified.
func a2aResultOATF(v *oatf.Value) *oatf.Value {
	if v == nil || v.Kind != oatf.Map {
		return v
	}
	out := v.Clone()
	if !out.Has("kind") {
		for _, w := range a2aWrappers {
			inner := out.Get(w.key)
			if inner == nil || inner.Kind != oatf.Map {
				continue
			}
			u := inner.Clone()
			if !u.Has("kind") {
				setString(u, "kind", w.kind)
			}
			for _, m := range out.Pairs {
				if m.Key != w.key && !u.Has(m.Key) {
					u.Set(m.Key, m.Value)
				}
			}
			out = u
			break
		}
	}
	if !out.Has("kind") {
		if k := a2aKindOf(out); k != "" {
			setString(out, "kind", k)
		}
	}
	switch out.Get("kind").StringOr("") {
	case "task":
		statusOATF(out.Get("status"))
		for _, m := range items(out.Get("history")) {
			messageOATF(m)
		}
		for _, a := range items(out.Get("artifacts")) {
			artifactOATF(a)
		}
	case "message":
		messageOATF(out)
	case "status-update":
		statusOATF(out.Get("status"))
	case "artifact-update":
		artifactOATF(out.Get("artifact"))
	}
	return out
}

// a2aParamsOATF returns a request's params in OATF's vocabulary: the
// message of message/send and message/stream is converted; everything else
// passes through. params is not modified; nil becomes {}.
func a2aParamsOATF(name string, params *oatf.Value) *oatf.Value {
	if params == nil {
		return oatf.NewMap()
	}
	out := params.Clone()
	if name == "message/send" || name == "message/stream" {
		messageOATF(out.Get("message"))
	}
	return out
}

// --- toward A2A 1.0 (returns new values) ---

// part10 returns a part in the 1.0 form: {text} | {data} | {url} | {raw},
// with mediaType, filename and metadata beside. The kind (or the `type`
// some documents write) is dropped.
func part10(p *oatf.Value) *oatf.Value {
	if p == nil || p.Kind != oatf.Map {
		return p
	}
	kind := p.Get("kind").StringOr(p.Get("type").StringOr(""))
	out := oatf.NewMap()
	for _, m := range p.Pairs {
		switch {
		case m.Key == "kind", m.Key == "type" && (kind == "text" || kind == "data" || kind == "file"):
		case m.Key == "file" && kind == "file" && m.Value.Kind == oatf.Map:
			for _, f := range []struct{ from, to string }{{"uri", "url"}, {"bytes", "raw"}, {"mimeType", "mediaType"}, {"name", "filename"}} {
				if v := m.Value.Get(f.from); v != nil {
					out.Set(f.to, v)
				}
			}
		default:
			out.Set(m.Key, m.Value)
		}
	}
	return out
}

func parts10(v *oatf.Value) *oatf.Value {
	if v == nil || v.Kind != oatf.Seq {
		return v
	}
	out := oatf.NewSeq()
	for _, p := range v.Items {
		out.Items = append(out.Items, part10(p))
	}
	return out
}

// message10 returns a message in the 1.0 form: ROLE_USER|ROLE_AGENT, 1.0
// parts, no kind.
func message10(m *oatf.Value) *oatf.Value {
	if m == nil || m.Kind != oatf.Map {
		return m
	}
	out := m.Clone()
	out.Delete("kind")
	if r := out.Get("role").StringOr(""); r == "user" || r == "agent" {
		setString(out, "role", "ROLE_"+strings.ToUpper(r))
	}
	if p := out.Get("parts"); p != nil {
		out.Set("parts", parts10(p))
	}
	return out
}

func status10(st *oatf.Value) *oatf.Value {
	if st == nil || st.Kind != oatf.Map {
		return st
	}
	out := st.Clone()
	if s := out.Get("state"); s != nil && s.Kind == oatf.String {
		setString(out, "state", a2aState10(s.Str))
	}
	if m := out.Get("message"); m != nil {
		out.Set("message", message10(m))
	}
	return out
}

func artifact10(a *oatf.Value) *oatf.Value {
	if a == nil || a.Kind != oatf.Map {
		return a
	}
	out := a.Clone()
	if p := out.Get("parts"); p != nil {
		out.Set("parts", parts10(p))
	}
	return out
}

// task10 reshapes, in place, a Task written the way the public scenario
// library writes it (status: "completed", the agent's message beside the
// status, artifacts without ids) into what A2A 1.0 decoders read: a
// status object whose message carries the text, and artifact ids. A 1.0
// client decodes the library's shape as an empty task (state unspecified,
// no message): the bait would never arrive. A status that is neither a
// string nor an object is left alone.
func task10(t *oatf.Value) {
	switch st := t.Get("status"); {
	case st == nil:
	case st.Kind == oatf.String:
		ns := oatf.NewMap()
		setString(ns, "state", st.Str)
		t.Set("status", ns)
	}
	if m := t.Get("message"); m != nil && m.Kind == oatf.Map {
		if st := t.Get("status"); st == nil || st.Kind == oatf.Map && !st.Has("message") {
			if st == nil {
				st = oatf.NewMap()
				setString(st, "state", "completed")
			}
			st.Set("message", m)
			t.Set("status", st)
			t.Delete("message")
		}
	}
	if st := t.Get("status"); st != nil && st.Kind == oatf.Map {
		if m := st.Get("message"); m != nil && m.Kind == oatf.Map {
			m = m.Clone()
			if !m.Has("messageId") {
				setString(m, "messageId", "msg-"+randomID())
			}
			if !m.Has("role") {
				setString(m, "role", "agent")
			}
			st.Set("message", m)
		}
	}
	for i, a := range items(t.Get("artifacts")) {
		if a.Kind == oatf.Map && !a.Has("artifactId") {
			a = a.Clone()
			setString(a, "artifactId", fmt.Sprintf("artifact-%d", i+1))
			t.Get("artifacts").Items[i] = a
		}
	}
}

// object10 converts an OATF Task, Message or update to its 1.0 form,
// without the wrapper.
func object10(v *oatf.Value) *oatf.Value {
	if v == nil || v.Kind != oatf.Map {
		return v
	}
	kind := v.Get("kind").StringOr("")
	if kind == "message" {
		return message10(v)
	}
	out := v.Clone()
	out.Delete("kind")
	switch kind {
	case "task":
		task10(out)
		if st := out.Get("status"); st != nil {
			out.Set("status", status10(st))
		}
		if h := out.Get("history"); h != nil && h.Kind == oatf.Seq {
			nh := oatf.NewSeq()
			for _, m := range h.Items {
				nh.Items = append(nh.Items, message10(m))
			}
			out.Set("history", nh)
		}
		if as := out.Get("artifacts"); as != nil && as.Kind == oatf.Seq {
			na := oatf.NewSeq()
			for _, a := range as.Items {
				na.Items = append(na.Items, artifact10(a))
			}
			out.Set("artifacts", na)
		}
	case "status-update":
		out.Delete("final")
		if st := out.Get("status"); st != nil {
			out.Set("status", status10(st))
		}
	case "artifact-update":
		if a := out.Get("artifact"); a != nil {
			out.Set("artifact", artifact10(a))
		}
	}
	return out
}

// a2aResult10 returns a result of method (an OATF name) in the 1.0 form:
// the stream items and message/send results wrapped by kind, tasks/get and
// tasks/cancel bare. Content of no known kind is sent as it is.
func a2aResult10(name string, v *oatf.Value) *oatf.Value {
	if v == nil || v.Kind != oatf.Map {
		return v
	}
	switch name {
	case "message/send", "message/stream", "tasks/resubscribe":
		kind := v.Get("kind").StringOr("")
		for _, w := range a2aWrappers {
			if w.kind == kind {
				out := oatf.NewMap()
				out.Set(w.key, object10(v))
				return out
			}
		}
	case "tasks/get", "tasks/cancel":
		return object10(v)
	}
	return v
}

// a2aParams10 returns OATF params in the 1.0 form.
func a2aParams10(name string, params *oatf.Value) *oatf.Value {
	if params == nil || params.Kind != oatf.Map || (name != "message/send" && name != "message/stream") {
		return params
	}
	out := params.Clone()
	if m := out.Get("message"); m != nil {
		out.Set("message", message10(m))
	}
	return out
}

// --- responses ---

// a2aResponse decodes one JSON-RPC response of an A2A peer. content is what
// triggers and indicators see: the result in OATF's vocabulary, or the
// error object ({code, message, data?}); code is the error's code, 0 for a
// result.
func a2aResponse(data []byte) (content *oatf.Value, code int64, err error) {
	v, err := DecodeJSON(data)
	if err != nil {
		return nil, 0, err
	}
	if v.Kind != oatf.Map {
		return nil, 0, errors.New("a2a: the answer is not a JSON-RPC response object")
	}
	if e := v.Get("error"); e != nil {
		if c := e.Get("code"); c != nil && c.Kind == oatf.Int {
			code = c.Int
		}
		if code == 0 {
			code = -32603 // an error without a usable code is still an error
		}
		return e, code, nil
	}
	if !v.Has("result") {
		return nil, 0, errors.New("a2a: the answer has neither result nor error")
	}
	return a2aResultOATF(v.Get("result")), 0, nil
}

// a2aStreamEvent decodes the data of one SSE event of an A2A stream opened
// by the OATF method stream (message/stream, tasks/resubscribe). It returns
// the OATF event: task/status for a status-update, task/artifact for an
// artifact-update, the stream's own method for a Task, a Message, anything
// else and an error response; and the content indicators see.
func a2aStreamEvent(stream string, data []byte) (string, *oatf.Value, error) {
	content, code, err := a2aResponse(data)
	if err != nil {
		return "", nil, err
	}
	if code == 0 {
		switch content.Get("kind").StringOr("") {
		case "status-update":
			return a2aStatusEvent, content, nil
		case "artifact-update":
			return a2aArtifactEvent, content, nil
		}
	}
	return stream, content, nil
}

// a2aEnvelope is the wire form of a JSON-RPC success response. It is
// written directly, so that content nested deeper than the strict decoder
// accepts is still sent as the document wrote it.
func a2aEnvelope(id string, result *oatf.Value) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, encodeJSON(result)...)
	return append(b, '}')
}
