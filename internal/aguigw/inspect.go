package aguigw

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
)

// verdict collects what the security stage decided about one message.
type verdict struct {
	findings []secproc.Finding
	deny     *secproc.Finding  // the first finding whose action is Deny
	targets  map[string]string // path in the message → the rule that quarantines it
	qrule    string            // the first rule that quarantined something
}

// denial returns the refusal for v, or nil.
func (v *verdict) denial() *deny.Denial {
	if v.deny == nil {
		return nil
	}
	return &deny.Denial{Stage: StageSecurity, Rule: deny.Rule(v.deny.Rule), Reason: v.deny.Message + " at " + v.deny.Path}
}

// decision is "allow" or "quarantine" for a message v does not deny.
func (v *verdict) decision() string {
	if len(v.targets) > 0 {
		return "quarantine"
	}
	return "allow"
}

// merge returns v with o's findings, targets and rules added after its
// own: the verdict recorded for a message inspected in parts.
func (v *verdict) merge(o *verdict) *verdict {
	v.findings = append(v.findings, o.findings...)
	if v.deny == nil {
		v.deny = o.deny
	}
	for p, r := range o.targets {
		if v.targets == nil {
			v.targets = map[string]string{}
		}
		if _, ok := v.targets[p]; !ok {
			v.targets[p] = r
		}
	}
	if v.qrule == "" {
		v.qrule = o.qrule
	}
	return v
}

// scope says whose content is inspected: the upstream, thread and principal.
type scope struct {
	session, principal string
}

// inspect runs the processor on raw, the value at path prefix of a message
// (".messages[3]", ".delta"), as kind, and adds its findings to v: each
// quarantined finding targets the string it was found in.
func (h *Handler) inspect(ctx context.Context, v *verdict, sc scope, kind secproc.Kind, tool, prefix string, raw []byte) {
	ev := secproc.Event{Kind: kind, Upstream: "agui:" + h.opts.Name, Session: sc.session, Subject: sc.principal, Tool: tool}
	root := "content"
	if kind == secproc.KindToolCall {
		ev.Arguments, root = raw, "arguments"
	} else {
		ev.Content = raw
	}
	for _, f := range h.proc.Inspect(ctx, ev) {
		v.findings = append(v.findings, f)
		a := h.action(f)
		if a == Quarantine && kind == secproc.KindToolCall {
			a = Deny // arguments cannot be made inert
		}
		switch a {
		case Deny:
			if v.deny == nil {
				f := f
				v.deny = &f
			}
		case Quarantine:
			if v.targets == nil {
				v.targets = map[string]string{}
			}
			path := prefix
			if rest, ok := strings.CutPrefix(f.Path, root); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
				path = prefix + rest
			}
			if _, ok := v.targets[path]; !ok {
				v.targets[path] = f.Rule
			}
			if v.qrule == "" {
				v.qrule = f.Rule
			}
		}
	}
}

// Marker returns the inert text that replaces a quarantined value of n
// characters (secproc.Marker).
func Marker(n int, rule string) string { return secproc.Marker(n, rule) }

// quarantine is secproc.Quarantine.
func quarantine(raw []byte, path string, targets map[string]string) []byte {
	return secproc.Quarantine(raw, path, targets)
}

// rewrite is secproc.Rewrite.
func rewrite(raw []byte, path string, targets map[string]string, mark func(old []byte, rule string) []byte) []byte {
	return secproc.Rewrite(raw, path, targets, mark)
}

// memberPath is secproc.MemberPath.
func memberPath(path, k string) string { return secproc.MemberPath(path, k) }

// instructionRoles are the roles whose messages instruct the model. Only
// the client may set them; the agent side can never add or change one.
var instructionRoles = map[string]bool{"system": true, "developer": true}

// sysMessage is a system or developer message of the client's input.
type sysMessage struct {
	role    string
	content string // the content, re-encoded by encoding/json for comparison
}

// systemMessages returns the input's system and developer messages by id.
func systemMessages(messages []any) map[string]sysMessage {
	out := map[string]sysMessage{}
	for _, m := range messages {
		o, _ := m.(map[string]any)
		role, _ := o["role"].(string)
		id, _ := o["id"].(string)
		if instructionRoles[role] && id != "" {
			out[id] = sysMessage{role: role, content: encode(o["content"])}
		}
	}
	return out
}

// userMessages returns the content of the input's user messages by id,
// re-encoded by encoding/json for comparison.
func userMessages(messages []any) map[string]string {
	out := map[string]string{}
	for _, m := range messages {
		o, _ := m.(map[string]any)
		if id, _ := o["id"].(string); o["role"] == "user" && id != "" {
			out[id] = encode(o["content"])
		}
	}
	return out
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// decodeAny decodes validated JSON with numbers kept as json.Number.
func decodeAny(raw []byte) any {
	var v any
	if (jsonrpc.UnmarshalOptions{UseNumber: true}).Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// checkInstructions is the prompt-integrity check of a value the agent
// sent: every object in it with a system or developer role must be one of
// the client's own messages (same id, role and content). An object whose
// id is a client system message but whose role or content differs changes
// it, and is refused too.
func checkInstructions(v any, sys map[string]sysMessage, path string) *deny.Denial {
	switch v := v.(type) {
	case map[string]any:
		role, hasRole := v["role"].(string)
		id, _ := v["id"].(string)
		own, isOwn := sys[id]
		switch {
		case hasRole && instructionRoles[role] && !isOwn:
			return &deny.Denial{Stage: StageIntegrity, Rule: deny.RuleSystemMessage,
				Reason: "the agent side added a " + role + " message at " + pathOrRoot(path) + "; only the client sets instructions"}
		case isOwn && hasRole && (role != own.role || encode(v["content"]) != own.content):
			return &deny.Denial{Stage: StageIntegrity, Rule: deny.RuleSystemMessageChanged,
				Reason: "the agent side changed the client's " + own.role + " message " + strconv.Quote(id) + " at " + pathOrRoot(path)}
		}
		for k, e := range v {
			if d := checkInstructions(e, sys, memberPath(path, k)); d != nil {
				return d
			}
		}
	case []any:
		for i, e := range v {
			if d := checkInstructions(e, sys, path+"["+strconv.Itoa(i)+"]"); d != nil {
				return d
			}
		}
	}
	return nil
}

// checkPatch refuses JSON Patch operations (STATE_DELTA, ACTIVITY_DELTA)
// that set a "role" member to system or developer, and values that carry a
// system or developer message that is not the client's.
func checkPatch(ops any, sys map[string]sysMessage, path string) *deny.Denial {
	list, _ := ops.([]any)
	for i, op := range list {
		o, _ := op.(map[string]any)
		p, _ := o["path"].(string)
		val, _ := o["value"].(string)
		if strings.HasSuffix(p, "/role") && instructionRoles[val] {
			return &deny.Denial{Stage: StageIntegrity, Rule: deny.RuleSystemMessage,
				Reason: "a patch operation at " + path + "[" + strconv.Itoa(i) + "] makes " + strconv.Quote(p) + " a " + val + " message"}
		}
	}
	return checkInstructions(ops, sys, path)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "the event"
	}
	return strings.TrimPrefix(p, ".")
}
